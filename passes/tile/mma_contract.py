"""``mma-contract``: a register-tiled matmul's products on tensor cores (``tile.mma``).

After ``register-tile``, ``chunk-matmul-k`` and ``blockify-launch`` a matmul block of
``Tm x Tn`` threads owns a ``BM x BN`` tile of the output, each thread a ``TM x TN``
register tile (rows ``%r_i = g_m * TM + i``, columns ``%c_j = g_n * TN + j``), and the K
chunk's loop yields the products ``x_i * w_j`` into ``TM * TN`` add accumulators.

An m16n8k8 tensor-core product (``dialects/mma.py``) leaves lane ``(g, t) = (lane / 4,
lane % 4)`` of a warp the 2 x 2 cross product of rows ``g, g + 8`` and columns ``2t,
2t + 1`` of a 16 x 8 tile: a register tile too, with other rows and columns. This pass

1. **renumbers the register tile** to that layout: the block's threads, taken 32 at a
   time in launch order (``tid = t_m * Tn + t_n``), are ``Tm / 8 x Tn / 4`` warps, each
   owning a ``WM x WN = 8 TM x 4 TN`` tile (``TM / 2 x TN / 2`` m16n8 tiles), and thread
   ``tid`` owns rows and columns::

       r_i = b_m BM + wm WM + (i / 2) 16 + g + 8 (i % 2)     (wm = warp / Wn, g = lane / 4)
       c_j = b_n BN + wn WN + (j / 2) 8 + 2t + (j % 2)       (wn = warp % Wn, t = lane % 4)

   a permutation of the block's outputs over its threads (each computed once, by the same
   code): ``permute-register-tile`` then leaves the kernel alone;
2. **contracts the K chunk by eights**: the loop ``k = 0 .. BK`` becomes ``k8 = 0 ..
   BK / 8``, whose body computes each A fragment (``x_i`` at ``k = 8 k8 + t`` and ``+ 4``:
   the thread's own rows) and each B fragment (``w`` at ``k = 8 k8 + t, + 4`` and the
   column ``.. + (j / 2) 8 + g``, not the thread's own) by cloning the ops that computed
   ``x_i`` and ``w_j`` with the K index and the column replaced, then one ``tile.mma`` a
   16 x 8 tile, yielding its four results to the accumulators of ``(i, j) = (2 mi + h,
   2 ni + e)`` (register ``2 h + e``).

The loads stay global loads of the operands: ``stage-inputs`` stages them in shared memory
as before (the slab is the block's rows and the chunk, whatever the thread layout).

It applies where the schedule planned the block tile, ``Tm % 8 == 0``, ``Tn % 4 == 0``,
``TM``, ``TN`` and ``BK / 8`` whole, and the chunk loop's body is products only (each
yield ``x * w``, ``x`` computed from the row ``i`` and K alone, ``w`` from the column
``j`` and K). Anything else is left to the FMA schedule. Off unless asked
(``precision``): ``tf32x3`` keeps about fp32's accuracy per product (not its bits: the
sums are reassociated), ``tf32`` does not. Summed in place over a whole long K on the
tensor core, tf32x3 drifted to 3e-5 of the largest output on the H100 (session 42), so
the emitter keeps each K chunk's products in accumulators of their own; whether that is
back near FMA accuracy, and at what cost, is the measurement that decides the default.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import Float32Type, FloatAttr, IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.dialects.mma import PRECISIONS
from deplodock.passes.tile.analysis import depends_on
from deplodock.target import DEFAULT_ARCH, pass_target

MMA_K = 8  # the K of one m16n8k8 product


def mma_warps(schedule: tile.ScheduleAttr) -> tuple[int, int] | None:
    """``(Wm, Wn)``: the warps of a block tile laid out for m16n8k8 products, or None
    where the tile cannot be (see the module docstring)."""
    tm, tn = schedule.thread_tile
    threads = schedule.block_threads
    if threads is None or tm % 2 or tn % 2 or schedule.k_chunk.data % MMA_K:
        return None
    threads_m, threads_n = threads
    if threads_m % 8 or threads_n % 4:
        return None
    return threads_m // 8, threads_n // 4


def _axis_parts(
    kernel: tile.KernelOp, group: SSAValue
) -> tuple[SSAValue | None, SSAValue, int] | None:
    """``(block part, thread part, threads)`` of a register tile's group value: the thread
    axis itself, or ``apply (d0 * T + d1)(block, thread)``."""
    axis = kernel.axis_of(group)
    if axis is not None:
        return (None, group, axis[0]) if axis[1] == "thread" else None
    owner = group.owner
    if not isinstance(owner, affine.ApplyOp) or len(owner.mapOperands) != 2:
        return None
    block, thread = owner.mapOperands
    block_axis, thread_axis = kernel.axis_of(block), kernel.axis_of(thread)
    if block_axis is None or thread_axis is None or block_axis[1] != "block":
        return None
    if thread_axis[1] != "thread":
        return None
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    if owner.map.data.results[0] != d0 * thread_axis[0] + d1:
        return None
    return block, thread, thread_axis[0]


def _tile_indices(kernel: tile.KernelOp, factor: int) -> dict[SSAValue, list[affine.ApplyOp]]:
    """Per group value, its ``factor`` index ops ``apply (d0 * factor + i)(group)``, by i."""
    found: dict[SSAValue, list[affine.ApplyOp | None]] = {}
    d0 = AffineExpr.dimension(0)
    offsets = {d0 * factor + i if i else d0 * factor: i for i in range(factor)}
    for op in kernel.body.block.ops:
        if not isinstance(op, affine.ApplyOp) or len(op.mapOperands) != 1:
            continue
        i = offsets.get(op.map.data.results[0])
        if i is None:
            continue
        slots = found.setdefault(op.mapOperands[0], [None] * factor)
        if slots[i] is None:
            slots[i] = op
    return {g: s for g, s in found.items() if all(o is not None for o in s)}  # type: ignore[misc]


@dataclass
class _Layout:
    """The warp layout: the new thread axes ``(wm, wn, g, t)`` (``tid = ((wm Wn + wn) 8 +
    g) 4 + t``: warp ``wm Wn + wn``, lane ``4 g + t``), the block axes and the sizes. Every
    index it makes is linear in them, so ``stage-inputs`` stages the operands as before."""

    mb: SSAValue | None
    nb: SSAValue | None
    wm: SSAValue
    wn: SSAValue
    g: SSAValue
    t: SSAValue
    tm: int
    tn: int
    warps_m: int
    warps_n: int

    def _index(self, terms: list[tuple[SSAValue | None, int]], offset: int, name: str):
        operands = [v for v, _ in terms if v is not None]
        expr = AffineExpr.constant(offset)
        k = 0
        for value, scale in terms:
            if value is not None:
                expr = expr + AffineExpr.dimension(k) * scale
                k += 1
        return apply_op(expr, operands, name)

    def row(self, i: int, name: str) -> affine.ApplyOp:
        """``r_i = b_m BM + wm WM + (i / 2) 16 + g + 8 (i % 2)``."""
        block_m = self.tm * 8 * self.warps_m
        terms = [(self.mb, block_m), (self.wm, 8 * self.tm), (self.g, 1)]
        return self._index(terms, (i // 2) * 16 + 8 * (i % 2), name)

    def column(self, j: int, name: str, b_fragment: bool = False) -> affine.ApplyOp:
        """``c_j = b_n BN + wn WN + (j / 2) 8 + 2t + j % 2``; ``b_fragment``: the column
        the thread loads of tile ``j / 2``'s B fragment, ``.. + (j / 2) 8 + g``."""
        block_n = self.tn * 4 * self.warps_n
        lane = (self.g, 1) if b_fragment else (self.t, 2)
        terms = [(self.nb, block_n), (self.wn, 4 * self.tn), lane]
        return self._index(terms, (j // 2) * 8 + (0 if b_fragment else j % 2), name)

    def k(self, k8: SSAValue, half: int, name: str) -> affine.ApplyOp:
        """``k = 8 k8 + t + 4 half``: the K of a lane's A (and B) fragment registers."""
        return self._index([(k8, MMA_K), (self.t, 1)], 4 * half, name)

    def tid(self) -> tuple[AffineExpr, list[SSAValue]]:
        d = [AffineExpr.dimension(k) for k in range(4)]
        return ((d[0] * self.warps_n + d[1]) * 8 + d[2]) * 4 + d[3], [
            self.wm,
            self.wn,
            self.g,
            self.t,
        ]


def _chunk_loop(kernel: tile.KernelOp, count: int) -> loop.ForOp | None:
    """The innermost reduce loop carrying ``count`` add accumulators (the K chunk's)."""
    found = None
    for op in kernel.walk():
        if (
            isinstance(op, loop.ForOp)
            and len(op.results) == count
            and all(k == "add" for k in op.kinds)
            and not any(isinstance(o, loop.ForOp) for o in op.body.block.ops)
        ):
            found = op
    return found


class _Rebuilder:
    """Clones the ops of a loop body that compute a value, with some values replaced."""

    def __init__(self, body: Block, out: Block):
        self.body = body  # the loop body whose ops are cloned
        self.out = out  # the block the clones are appended to

    def value(self, v: SSAValue, mapping: dict[SSAValue, SSAValue], memo: dict) -> SSAValue:
        if v in mapping:
            return mapping[v]
        owner = v.owner
        if not isinstance(owner, Operation) or owner.parent_block() is not self.body:
            return v
        if owner not in memo:
            operands = [self.value(o, mapping, memo) for o in owner.operands]
            clone = owner.clone()
            for k, o in enumerate(operands):
                clone.operands[k] = o
            self.out.add_op(clone)
            memo[owner] = clone
        return memo[owner].results[list(owner.results).index(v)]


class ContractKernel(RewritePattern):
    def __init__(self, precision: str):
        self.precision = precision

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        schedule = tile.schedule_of(op)
        if schedule is None or not tile.is_register_tiled(op) or schedule.mma.data:
            return
        warps = mma_warps(schedule)
        if warps is None:
            return
        tm, tn = schedule.thread_tile
        rows_by_group, cols_by_group = _tile_indices(op, tm), _tile_indices(op, tn)
        # The rows' thread axis launches before the columns' (t_m-major: the warps are
        # as laid out), the block's only two.
        thread_axes = [a for a, _, b in op.axes if b == "thread"]
        parts = None
        for rg, rows in rows_by_group.items():
            for cg, cols in cols_by_group.items():
                rparts, cparts = _axis_parts(op, rg), _axis_parts(op, cg)
                if rparts is not None and cparts is not None:
                    if [rparts[1], cparts[1]] == thread_axes:
                        parts = (rparts, cparts, rows, cols)
        if parts is None:
            return
        (mb, mt, threads_m), (nb, nt, threads_n), rows, cols = parts
        if (threads_m, threads_n) != schedule.block_threads:
            return
        chunk = _chunk_loop(op, tm * tn)
        if chunk is None or chunk.operands or chunk.lower.data != 0 or chunk.upper.data % MMA_K:
            return
        products = _products(chunk, [r.result for r in rows], [c.result for c in cols], tm, tn)
        if products is None:
            return
        # 1. the warp layout: four thread axes for the two, and the tile renumbered.
        old_axes = op.axes
        body = op.body.block
        position = list(body.args).index(mt)
        new_args = []
        for k, hint in enumerate(("wm", "wn", "g", "t")):
            arg = rewriter.insert_block_argument(body, position + k, IndexType())
            arg.name_hint = hint
            new_args.append(arg)
        layout = _Layout(mb, nb, *new_args, tm, tn, warps[0], warps[1])
        prologue: list[Operation] = []
        new_cols = {}
        for i, old in enumerate(rows):
            new = layout.row(i, old.result.name_hint or f"r{i}")
            prologue.append(new)
            rewriter.replace_all_uses_with(old.result, new.result)
        for j, old in enumerate(cols):
            new = layout.column(j, old.result.name_hint or f"c{j}")
            prologue.append(new)
            rewriter.replace_all_uses_with(old.result, new.result)
            new_cols[j] = new.result
        b_cols = []
        for ni in range(tn // 2):
            b_col = layout.column(2 * ni, f"b_col{ni}", b_fragment=True)
            prologue.append(b_col)
            b_cols.append(b_col.result)
        for old in [*rows, *cols]:
            rewriter.erase_op(old)
        for group in {rows[0].operands[0].owner, cols[0].operands[0].owner}:
            if isinstance(group, affine.ApplyOp) and not group.result.uses:
                rewriter.erase_op(group)
        tid, tid_operands = layout.tid()
        for old_axis, expr in ((mt, tid // threads_n), (nt, tid % threads_n)):
            if old_axis.uses:
                flat = apply_op(expr, tid_operands, old_axis.name_hint)
                prologue.append(flat)
                rewriter.replace_all_uses_with(old_axis, flat.result)
        rewriter.insert_op(prologue, InsertPoint.at_start(body))
        rewriter.erase_block_argument(mt)
        rewriter.erase_block_argument(nt)
        # 2. the chunk loop by eights.
        xs, ws = products
        _contract(chunk, xs, ws, new_cols, b_cols, layout, self.precision, rewriter)
        axes = []
        for arg, extent, binding in old_axes:
            if arg is mt:
                axes += [(warps[0], "thread"), (warps[1], "thread"), (8, "thread"), (4, "thread")]
            elif arg is not nt:
                axes.append((extent, binding))
        kernel = tile.KernelOp(
            op.sym_name.data, axes, list(op.inputs), [r.type for r in op.results], op.body.clone()
        )
        kernel.attributes.update(op.attributes)
        kernel.attributes[tile.SCHEDULE] = schedule.replace(mma=self.precision)
        rewriter.replace_op(op, kernel)


def _products(
    chunk: loop.ForOp, rows: list[SSAValue], cols: list[SSAValue], tm: int, tn: int
) -> tuple[list[SSAValue], list[SSAValue]] | None:
    """``(x_i, w_j)``: the factors of the yields ``x_i * w_j`` ((i, j)-major), each ``x_i``
    computed from row ``i`` and not from any column (and ``w_j`` the other way)."""
    yield_ = chunk.body.block.last_op
    if not isinstance(yield_, loop.YieldOp):
        return None
    xs: list[SSAValue | None] = [None] * tm
    ws: list[SSAValue | None] = [None] * tn
    memos: dict[SSAValue, dict] = {}

    def on(value: SSAValue, target: SSAValue) -> bool:
        return depends_on(value, target, memos.setdefault(target, {}))

    for p, value in enumerate(yield_.values):
        i, j = divmod(p, tn)
        mul = value.owner
        if not isinstance(mul, arith.MulfOp) or not isinstance(value.type, Float32Type):
            return None
        for x, w in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
            if (
                on(x, rows[i])
                and not any(on(x, c) for c in cols)
                and on(w, cols[j])
                and not any(on(w, r) for r in rows)
            ):
                break
        else:
            return None
        if xs[i] not in (None, x) or ws[j] not in (None, w):
            return None
        # w is re-computed for the B fragment by substituting the column value itself:
        # every value from outside the loop that it reads and that depends on a column
        # must be that column (else the substitution would miss it).
        for v in _read_from_outside(w, chunk.body.block):
            if v is not cols[j] and any(on(v, c) for c in cols):
                return None
        xs[i], ws[j] = x, w
    return xs, ws  # type: ignore[return-value]


def _read_from_outside(value: SSAValue, body: Block) -> set[SSAValue]:
    """The values defined outside ``body`` that the ops of ``body`` computing ``value``
    read (``value`` itself when it is defined outside)."""
    found: set[SSAValue] = set()
    seen: set[Operation] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        owner = v.owner
        if not isinstance(owner, Operation) or owner.parent_block() is not body:
            found.add(v)
            continue
        if owner not in seen:
            seen.add(owner)
            stack.extend(owner.operands)
    return found


def _contract(
    chunk: loop.ForOp,
    xs: list[SSAValue],
    ws: list[SSAValue],
    cols: dict[int, SSAValue],
    b_cols: list[SSAValue],
    layout: _Layout,
    precision: str,
    rewriter: PatternRewriter,
) -> None:
    tm, tn = layout.tm, layout.tn
    body = Block(arg_types=[chunk.body.block.args[0].type])
    k8 = body.args[0]
    k8.name_hint = "k8"
    old_k = chunk.body.block.args[0]
    rebuild = _Rebuilder(chunk.body.block, body)
    ks = []
    for half in range(2):
        k = layout.k(k8, half, f"k{half}")
        body.add_op(k)
        ks.append(k.result)
    a = [[[None] * 2 for _ in range(2)] for _ in range(tm // 2)]  # [mi][h][half]
    memos = [{}, {}]
    for i, x in enumerate(xs):
        for half in range(2):
            a[i // 2][i % 2][half] = rebuild.value(x, {old_k: ks[half]}, memos[half])
    b = []
    for ni in range(tn // 2):
        w = ws[2 * ni]
        regs = []
        for half in range(2):
            mapping = {old_k: ks[half], cols[2 * ni]: b_cols[ni]}
            regs.append(rebuild.value(w, mapping, {}))
        b.append(regs)
    zero = arith.ConstantOp(FloatAttr(0.0, Float32Type()))
    body.add_op(zero)
    out: list[SSAValue | None] = [None] * (tm * tn)
    for mi in range(tm // 2):
        fragment_a = [a[mi][0][0], a[mi][1][0], a[mi][0][1], a[mi][1][1]]
        for ni in range(tn // 2):
            mma = tile.MmaOp(fragment_a, b[ni], [zero.result] * 4, precision)
            body.add_op(mma)
            for r, d in enumerate(mma.d):
                h, e = divmod(r, 2)
                out[(2 * mi + h) * tn + 2 * ni + e] = d
    body.add_op(loop.YieldOp(*out))
    new = loop.ForOp(
        0,
        chunk.upper.data // MMA_K,
        Region(body),
        chunk.kinds,
        [r.type for r in chunk.results],
    )
    new.attributes.update(chunk.attributes)
    rewriter.replace_op(chunk, new)


@dataclass(frozen=True)
class MmaContract(ModulePass):
    """Run a register-tiled matmul's products on tensor cores (see the module docstring)."""

    name = "mma-contract"

    precision: str = ""
    """``tf32x3`` (about fp32's accuracy), ``tf32`` (about 1e-3), or "" (off: FMAs)."""

    arch: str = DEFAULT_ARCH
    """The target: its ``mma`` must list tf32 (sm_80 and later)."""

    def __post_init__(self) -> None:
        # At construction, so that `-p` refuses it before any work (from_pass_spec).
        if self.precision not in ("", *PRECISIONS):
            raise ValueError(f"precision={self.precision} is not one of {PRECISIONS} (or '')")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.precision:
            return
        target = pass_target(self.name, self.arch)
        if "tf32" not in target.mma:
            raise DiagnosticException(
                f"mma-contract: {target.arch} has no tf32 tensor-core product (sm_80 and later)"
            )
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ContractKernel(self.precision)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
