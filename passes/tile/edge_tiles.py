"""Edge tiles: a contraction whose extents no block tile divides, padded up to one that does.

A matmul of irregular size (``M = 1000``, ``N = 1001``, ``K = 999``) has no tile of the
planner's that divides it, and a schedule without guards cannot cover its last rows and
columns: a barrier under a guard would deadlock the block, since a block's threads all
fill and read the same slabs. So the kernel is rounded up instead: its last two axes to
multiples of the block tile, its K loop to a multiple of the K chunk (times the K splits),
and every access whose index may now leave its buffer is ``guarded``: a load there reads
0, a store there writes nothing (``dialects/access.py``). Every thread of every block then
runs the whole schedule, barriers included; the out-of-range rows and columns compute
values that are never stored, and the padded K steps add products of zeros::

    axes(%m : 1000 = free, %n : 1001 = free) {
      %acc = loop.for %k = 0 to 999 reduce(add) -> f32 {
        %x = loop.load %x_b[%m, %k]   %w = loop.load %w_b[%k, %n]  ..}
      loop.store %acc, %y_b[%m, %n] }

    axes(%m : 1024 = free, %n : 1024 = free) {
      %acc = loop.for %k = 0 to 1008 reduce(add) -> f32 {
        %x = loop.load %x_b[%m, %k] guarded   %w = loop.load %w_b[%k, %n] guarded  ..}
      loop.store %acc, %y_b[%m, %n] guarded }

The slabs of the later passes inherit the guard (``tile.stage .. guarded``: a box that
reaches past the source holds zeros there), their fills test each element (or each
16-byte vector, when the rows keep its alignment) and ``cp.async`` zero-fills.

Padding the K loop is exact only when each padded step adds a zero: ``pads_k_exactly``
asks that every accumulator adds a product of values that are zero where the loads of
the step are out of range (``x[m, k] * w[k, n]``, also through sums, negations and
conversions of such loads); otherwise only M and N are padded, and a K no chunk divides
leaves the kernel to the default schedule. The planner (``schedule.matmul.plan_matmul``)
prices the padded work, so it picks the tile that wastes least for its speed.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, IntAttr, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from deplodock.dialects import loop, tile
from deplodock.passes.tile.analysis import top_level_reduces

# Ops a value zero at the padded steps stays zero through (both operands zero for the
# binary ones: 0 * x is not 0 when x is infinite).
_ZERO_KEEPING = (
    arith.MulfOp,
    arith.AddfOp,
    arith.SubfOp,
    arith.NegfOp,
    arith.ExtFOp,
    arith.TruncFOp,
)


def _zero_when_padded(value: SSAValue, reduce: loop.ForOp) -> bool:
    """Whether ``value`` is 0 at every step of ``reduce`` past its end once guarded: a
    load with a dimension of extent K indexed by the induction variable alone (so out of
    range exactly there), or a zero-keeping op of such values."""
    owner = value.owner
    if isinstance(owner, loop.LoadOp):
        shape = owner.buffer.type.get_shape()  # type: ignore[attr-defined]
        for expr, size in zip(owner.map.data.results, shape, strict=True):
            if (
                isinstance(expr, AffineDimExpr)
                and owner.indices[expr.position] is reduce.induction_var
                and size == reduce.upper.data
            ):
                return True
        return False
    if isinstance(owner, _ZERO_KEEPING):
        return all(_zero_when_padded(o, reduce) for o in owner.operands)
    return False


def pads_k_exactly(reduce: loop.ForOp) -> bool:
    """Whether steps of ``reduce`` past its end, with the loads indexed by its induction
    variable reading 0, add exactly nothing: every accumulator adds (combine ``add``) a
    product whose factors are such loads (see the module docstring)."""
    yield_op = reduce.body.block.last_op
    if reduce.lower.data != 0 or not isinstance(yield_op, loop.YieldOp):
        return False
    if any(kind != "add" for kind in reduce.kinds):
        return False
    for value in yield_op.values:
        owner = value.owner
        if not isinstance(owner, arith.MulfOp):
            return False
        if not all(_zero_when_padded(o, reduce) for o in owner.operands):
            return False
    return True


def round_up(extent: int, multiple: int) -> int:
    return -(-extent // multiple) * multiple


def pad_contraction(kernel: tile.KernelOp, block_m: int, block_n: int, k_multiple: int) -> bool:
    """Round ``kernel``'s last two axes up to ``block_m`` and ``block_n`` and its one
    top-level reduce loop up to ``k_multiple``, in place, guarding the accesses that may
    now leave their buffers (see the module docstring); False when they divide already.
    K is padded only where ``pads_k_exactly`` holds (the planner asked it first)."""
    extents = [e for _, e, _ in kernel.axes]
    padded = [*extents[:-2], round_up(extents[-2], block_m), round_up(extents[-1], block_n)]
    reduces = top_level_reduces(kernel)
    k_extent = max(r.extent for r in reduces)
    padded_k = round_up(k_extent, k_multiple)
    if padded == extents and padded_k == k_extent:
        return False
    if padded_k != k_extent:
        (reduce,) = reduces
        if not pads_k_exactly(reduce):
            raise ValueError(f"@{kernel.sym_name.data}: its K loop cannot be padded exactly")
        reduce.upper = IntAttr(padded_k)
    kernel.extents = ArrayAttr([IntAttr(e) for e in padded])
    guard_accesses(kernel)
    return True


def guard_accesses(kernel: Operation) -> None:
    """Mark every load and store in ``kernel`` whose index may leave its buffer."""
    for op in kernel.walk():
        if isinstance(op, loop.LoadOp | loop.StoreOp) and not op.is_guarded:
            op.guarded = UnitAttr()
            if not op.guarded_dims():
                del op.properties["guarded"]
