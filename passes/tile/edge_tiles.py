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

An operand whose rows are no multiple of 16 bytes (``K = 3011``) cannot be read 16
bytes at a time, and its guarded 4-byte fills made a 3001 x 3011 x 2999 product 1.7x
slower than 3072^3 on the H200, where a padded but aligned 3000 x 3012 x 3000 one was
within 6%. ``align_operands`` copies such an operand once, in a kernel of its own, into
a zero-padded buffer as large as the padded kernel reads (its rows then aligned), when
that copy costs little beside the product (``ALIGN_COST``); the product's loads of it
need no guard any more.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, IntAttr, MemRefType, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import dims_leaving, expr_range, value_ranges
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
            shape = op.buffer.type.get_shape()  # type: ignore[attr-defined]
            if dims_leaving(op.map.data, op.indices, shape):
                op.guarded = UnitAttr()


ALIGN_COST = 0.05
"""Copy an unaligned operand when its bytes, read and written at the copy bandwidth, take
at most this share of the product's FLOPs at the fp32 rate (on the H200 about 40 FLOPs
a byte: a 3000^3 product, 2.5% each way; a 257^3 one is left guarded)."""

ALIGN = 4  # elements: a row of fp32 that keeps 16-byte alignment


def _read_shape(kernel: tile.KernelOp, buffer: SSAValue) -> list[int] | None:
    """The extents of ``buffer`` the kernel's loads reach (at least its own shape), the
    last one rounded up to ``ALIGN``; None when some index's range is unknown."""
    shape = list(buffer.type.get_shape())  # type: ignore[attr-defined]
    reach = list(shape)
    for use in buffer.uses:
        load = use.operation
        if not isinstance(load, loop.LoadOp):
            return None
        ranges = value_ranges(load.indices)
        for dim, expr in enumerate(load.map.data.results):
            bounds = expr_range(expr, ranges)
            if bounds is None or bounds[0] < 0:
                return None
            reach[dim] = max(reach[dim], bounds[1] + 1)
    reach[-1] = round_up(reach[-1], ALIGN)
    return reach


def align_operands(kernel: tile.KernelOp, flops_per_byte: float) -> list[tile.KernelOp]:
    """Copy each operand of the padded contraction ``kernel`` whose rows are unaligned
    into a zero-padded, aligned buffer, by a kernel inserted before it, where the copy is
    cheap (see the module docstring; ``flops_per_byte``: the target's fp32 rate over its
    copy bandwidth). Returns the copy kernels."""
    (_, m_extent, _), (_, n_extent, _) = kernel.axes[-2], kernel.axes[-1]
    reduces = top_level_reduces(kernel)
    k_extent = max(r.extent for r in reduces)
    batch = 1
    for _, extent, _ in kernel.axes[:-2]:
        batch *= extent
    flops = 2 * batch * m_extent * n_extent * k_extent
    read_in_k = {o.buffer for r in reduces for o in r.walk() if isinstance(o, loop.LoadOp)}
    copies = []
    for position, buffer in enumerate(kernel.input_buffers):
        shape = buffer.type.get_shape()  # type: ignore[attr-defined]
        if buffer not in read_in_k or shape[-1] % ALIGN == 0:
            continue
        padded = _read_shape(kernel, buffer)
        if padded is None:
            continue
        element = buffer.type.element_type  # type: ignore[attr-defined]
        moved = 2 * tile.memref_bytes(MemRefType(element, padded))
        if moved * flops_per_byte > ALIGN_COST * flops:
            continue
        copy = _copy_kernel(kernel, position, padded)
        Rewriter.insert_op(copy, InsertPoint.before(kernel))
        block = kernel.body.block
        new_arg = block.insert_arg(MemRefType(element, padded), buffer.index)
        new_arg.name_hint = buffer.name_hint
        buffer.replace_all_uses_with(new_arg)
        block.erase_arg(buffer)
        kernel.operands[position] = copy.results[0]
        copies.append(copy)
    for op in kernel.walk():  # the copied operands' loads stay inside now
        if isinstance(op, loop.LoadOp) and op.is_guarded and not op.guarded_dims():
            del op.properties["guarded"]
    return copies


def _copy_kernel(kernel: tile.KernelOp, position: int, padded: list[int]) -> tile.KernelOp:
    """A kernel over ``padded`` copying input ``position`` of ``kernel`` there (zeros
    past its end: a guarded load), as tileify leaves kernels: every axis free."""
    source = kernel.inputs[position]
    element = source.type.element_type  # type: ignore[attr-defined]
    result = TensorType(element, padded)
    axes = [(e, "free") for e in padded]
    body = tile.KernelOp.empty_body(axes, [source.type], [result])
    block = body.block
    ivs = list(block.args[: len(axes)])
    for i, iv in enumerate(ivs):
        iv.name_hint = f"a{i}"
    src, out = block.args[len(axes)], block.args[len(axes) + 1]
    hint = (kernel.input_buffers[position].name_hint or "in").removesuffix("_b")
    src.name_hint, out.name_hint = f"{hint}_b", f"{hint}_aligned_b"
    identity = AffineMap(len(ivs), 0, tuple(AffineExpr.dimension(i) for i in range(len(ivs))))
    load = loop.LoadOp(src, identity, ivs, guarded=True)
    block.add_ops([load, loop.StoreOp(load.result, out, identity, ivs)])
    copy = tile.KernelOp(f"{kernel.sym_name.data}_align{position}", axes, [source], [result], body)
    copy.results[0].name_hint = f"{hint}_aligned"
    return copy  # its load stays guarded: the last dimension is padded to ALIGN
