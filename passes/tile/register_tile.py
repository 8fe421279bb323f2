"""``register-tile``: each thread of a contraction computes a ``TM x TN`` tile of outputs.

Right after ``tileify`` a matmul-like kernel computes one output per iteration point of its
axes: ``out[m, n] = sum_k x[m, k] * w[k, n]`` (plus a prologue on the operands and an
epilogue: bias, activation, residual). Each multiply-add then costs two loads, and every
loaded element is loaded again by the ``N - 1`` (resp. ``M - 1``) other outputs that need
it. This pass unrolls the last two axes by ``TM`` and ``TN`` and jams the copies' K loops
into one, so a thread holds ``TM * TN`` accumulators in registers and loads each operand
element it needs once per ``k``: ``x[m_i, k]`` serves the ``TN`` columns of row ``i``,
``w[k, n_j]`` the ``TM`` rows of column ``j``. The loads per FMA fall from 2 to
``(TM + TN) / (TM * TN)`` (1/2 for 4 x 4)::

    axes(%a0 : 64 = free, %a1 : 96 = free) {
      %acc = loop.for %k = 0 to 128 reduce(add) -> f32 {
        %x = loop.load %x_b[%a0, %k]     %w = loop.load %w_b[%k, %a1]
        %p = arith.mulf %x, %w           loop.yield %p }
      %r = arith.maximumf %acc, %zero    loop.store %r, %y_b[%a0, %a1] }

    axes(%a0_g : 16 = free, %a1_g : 24 = free) {
      %a0_0 = affine.apply (%a0_g * 4) .. %a0_3 = affine.apply (%a0_g * 4 + 3)   // rows
      %a1_0 = affine.apply (%a1_g * 4) .. %a1_3 = affine.apply (%a1_g * 4 + 3)   // columns
      %acc_0_0, .., %acc_3_3 = loop.for %k = 0 to 128 reduce(add, .., add) -> (f32, ..) {
        %x_r0 .. %x_r3 = loop.load %x_b[%a0_i, %k]        // 4 row loads
        %w_c0 .. %w_c3 = loop.load %w_b[%k, %a1_j]        // 4 column loads
        %p_0_0 = arith.mulf %x_r0, %w_c0 .. %p_3_3       // 16 products
        loop.yield %p_0_0, .., %p_3_3 }
      the epilogue, once per (i, j): %r_i_j = arith.maximumf %acc_i_j, %zero; store .. }

The rewrite, unroll-and-jam of the two axes over the kernel's top-level ops:

* the axes' extents become ``M / TM`` and ``N / TN``; the index of copy ``(i, j)`` is
  ``%m_i = affine.apply (%m_g * TM + i)`` and ``%n_j = affine.apply (%n_g * TN + j)``,
  computed once per thread at the top of the kernel;
* each top-level reduce loop becomes one loop carrying ``TM * TN`` times its accumulators
  (``(i, j)``-major), each with its own combine kind (add, max, ...: nothing is merged
  across copies); its body holds every copy's ops, and a copy of an op whose operands are
  the same as an earlier copy's is not emitted again: a pure op, or a load of a buffer the
  kernel never writes (the row loads are shared across ``j``, the column loads across
  ``i``, a prologue such as ``x + b`` is computed ``TM`` times, not ``TM * TN``);
* every other top-level op (the prologue's scalars, the epilogue, the stores) is
  replicated per ``(i, j)`` in runs between reduce loops, with the same deduplication (a
  bias ``b[n_j]`` is loaded ``TN`` times, a constant once).

So the same additions happen in the same order per output: the result is exact, not
merely close.

The decision is ``tile_factors``: a kernel straight from ``tileify`` (every axis free, no
applied ``#tile.schedule`` yet: the pass is idempotent), at least two axes, and a
contraction (a top-level reduce loop loads an element that not every axis indexes; see
``analysis.is_contraction``). Each of the last two axes is tiled by its factor
(``tm`` for the second-to-last, ``tn`` for the last; 1 leaves the axis alone) when the
factor divides its extent and some load of a reduce loop does not depend on that axis
(else no load is shared across its copies: nothing to reuse). The factors are the
planner's by default (``tm = tn = 0``: ``plan_matmul`` in ``passes/tile/schedule/matmul.py``,
or the plan ``split-matmul-k`` left on a kernel of partial sums), and a shape the planner
has no tile for is left to the default schedule. The pass refuses a reduce loop that
writes memory. The tiled kernel carries its ``#tile.schedule`` (``schedule =
#tile.schedule<thread = [TM, TN], threads = [Tm, Tn], k_chunk = BK, ..>``; only the
register tile when options gave it) for the passes that follow. Each thread keeps its
whole tile: the K loop stays per thread, and ``cooperative-reduce`` leaves a register-tiled
kernel alone.

The rest of the matmul schedule is later passes: ``chunk-matmul-k`` (K in chunks),
``blockify-launch`` (the block tile), ``permute-register-tile`` (float4 column strips),
``stage-inputs`` (each chunk of both operands in shared memory) and ``pad-smem``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, ModuleOp
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
from xdsl.traits import Pure
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.passes.tile.analysis import depends_on, shares_loads_across, top_level_reduces
from deplodock.passes.tile.edge_tiles import round_up
from deplodock.passes.tile.schedule.matmul import (
    DEFAULT_BK,
    MatmulTile,
    matmul_problem,
    pad_to_schedule,
    plan_matmul,
    schedule_for,
)
from deplodock.target import DEFAULT_ARCH, Target, pass_target


def _factor(extent: int, factor: int, reused: bool) -> int:
    return factor if factor > 1 and extent % factor == 0 and reused else 1


def tile_factors(
    kernel: tile.KernelOp,
    tm: int,
    tn: int,
    target: Target | None = None,
    block: MatmulTile | None = None,
) -> tuple[int, int, tile.ScheduleAttr | None] | None:
    """Cost function: ``(TM, TN, schedule)`` for the last two axes of ``kernel``, or None
    to leave it.

    See the module docstring: a contraction straight from ``tileify`` (``matmul_problem``),
    each axis tiled by its factor when the factor divides its extent and the axis's copies
    share a load. With ``tm = tn = 0`` the schedule is the planner's (``plan_matmul``, or
    the plan ``split-matmul-k`` left), which the later passes follow; a shape it has no
    tile for is left alone. ``block``: a whole block tile the options gave (``tm``, ``tn``
    with the threads and K chunk: a sweep's variant), scheduled and padded to as the
    planner's would be.
    """
    schedule = tile.schedule_of(kernel)
    if schedule is not None and not schedule.is_planned:
        return None  # tiled already: the pass is idempotent
    by_model = tm == 0 and tn == 0
    if matmul_problem(kernel, by_model) is None:
        return None
    if by_model:
        schedule = schedule or plan_matmul(kernel, target, split=False)
        if schedule is None:
            return None
        tm, tn = schedule.thread_tile
    elif block is not None:
        schedule = schedule_for(block, schedule.splits.data if schedule is not None else 1)
    else:
        schedule = None
    reduces = top_level_reduces(kernel)
    (m, m_extent, _), (n, n_extent, _) = kernel.axes[-2], kernel.axes[-1]
    if schedule is not None:  # a block tile: edge tiles pad what it does not divide
        block_m, block_n = schedule.block_tile
        m_extent, n_extent = round_up(m_extent, block_m), round_up(n_extent, block_n)
    factors = (
        _factor(m_extent, tm, shares_loads_across(reduces, m)),
        _factor(n_extent, tn, shares_loads_across(reduces, n)),
    )
    return (*factors, schedule) if factors != (1, 1) else None


class _Jammer:
    """Emits the copies of ops, one value mapping per ``(i, j)``, sharing identical ones."""

    def __init__(self, tm: int, tn: int, m: SSAValue, n: SSAValue, written: set[SSAValue]):
        self.tm, self.tn = tm, tn
        self.copies = [(i, j) for i in range(tm) for j in range(tn)]
        self.maps: dict[tuple[int, int], dict[SSAValue, SSAValue]] = {c: {} for c in self.copies}
        self.axes = (m, n)
        self.written = written  # buffers stored to somewhere in the kernel
        self.shared: dict[tuple, Operation] = {}  # (original op, mapped operands) -> copy
        self.memo: tuple[dict, dict] = ({}, {})

    def _shareable(self, op: Operation) -> bool:
        if op.regions:
            return False
        if isinstance(op, loop.LoadOp):
            return op.buffer not in self.written
        return op.has_trait(Pure)

    def _hint(self, value: SSAValue, i: int, j: int) -> str | None:
        if value.name_hint is None:
            return None
        on_m = self.tm > 1 and depends_on(value, self.axes[0], self.memo[0])
        on_n = self.tn > 1 and depends_on(value, self.axes[1], self.memo[1])
        if on_m and on_n:
            return f"{value.name_hint}_r{i}c{j}"
        if on_m:
            return f"{value.name_hint}_r{i}"
        if on_n:
            return f"{value.name_hint}_c{j}"
        return value.name_hint

    def emit(self, op: Operation, copy: tuple[int, int], at: Block) -> None:
        """Add copy ``copy`` of ``op`` at the end of ``at`` (or reuse an identical one)."""
        mapping = self.maps[copy]
        operands = tuple(mapping.get(o, o) for o in op.operands)
        key = (op, operands)
        if self._shareable(op) and key in self.shared:
            for old, new in zip(op.results, self.shared[key].results, strict=True):
                mapping[old] = new
            return
        new = op.clone(mapping)
        for old, result in zip(op.results, new.results, strict=True):
            result.name_hint = self._hint(old, *copy)
        at.add_op(new)
        if self._shareable(op):
            self.shared[key] = new

    def jam(self, reduce: loop.ForOp, at: Block) -> None:
        """One reduce loop with every copy's accumulators, added at the end of ``at``."""
        body = Block(arg_types=[IndexType()])
        iv = body.args[0]
        iv.name_hint = reduce.induction_var.name_hint
        yielded: list[SSAValue] = []
        for copy in self.copies:
            self.maps[copy][reduce.induction_var] = iv
        for copy in self.copies:
            for op in reduce.body.block.ops:
                if isinstance(op, loop.YieldOp):
                    yielded += [self.maps[copy].get(v, v) for v in op.values]
                else:
                    self.emit(op, copy, body)
        body.add_op(loop.YieldOp(*yielded))
        count = len(self.copies)
        jammed = loop.ForOp(
            reduce.lower.data,
            reduce.upper.data,
            Region(body),
            reduce.kinds * count,
            [r.type for r in reduce.results] * count,
        )
        jammed.unroll = reduce.unroll
        jammed.attributes.update(reduce.attributes)
        at.add_op(jammed)
        results = iter(jammed.results)
        for copy in self.copies:
            for old in reduce.results:
                new = next(results)
                self.maps[copy][old] = new
                new.name_hint = self._hint(old, *copy)


class RegisterTileKernel(RewritePattern):
    """Unroll-and-jam the last two axes of a contraction kernel (see the module docstring)."""

    def __init__(
        self,
        tm: int,
        tn: int,
        threads_m: int = 0,
        threads_n: int = 0,
        resident: int = 0,
        target: Target | None = None,
        bk: int = 0,
    ):
        self.tm, self.tn = tm, tn
        self.block = None
        if min(tm, tn, threads_m, threads_n) > 0:
            self.block = MatmulTile(tm, tn, threads_m, threads_n, bk or DEFAULT_BK)
        self.resident = resident
        self.target = target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        factors = tile_factors(op, self.tm, self.tn, self.target, self.block)
        if factors is None:
            return
        tm, tn, schedule = factors
        planned = tile.schedule_of(op)  # a kernel of partial sums keeps its splits
        splits = planned.splits.data if planned is not None else 1
        if schedule is not None:  # edge tiles, if its block tile does not divide
            # (the planner asked whether K pads exactly; an option's chunk pads K only so)
            problem = matmul_problem(op, by_model=False) if self.block else None
            pad_k = problem is None or problem.pads_k
            pad_to_schedule(op, schedule, False, self.target, pad_k=pad_k)
        if self.block is not None and self.resident:
            schedule = schedule.replace(resident=self.resident)
        old = op.body.block
        axes = op.axes
        (m, m_extent, _), (n, n_extent, _) = axes[-2], axes[-1]
        written = {s.buffer for s in op.walk() if isinstance(s, loop.StoreOp)}
        jammer = _Jammer(tm, tn, m, n, written)

        new = Block(arg_types=[a.type for a in old.args])
        for arg, new_arg in zip(old.args, new.args, strict=True):
            new_arg.name_hint = arg.name_hint
            for mapping in jammer.maps.values():
                mapping[arg] = new_arg
        new_m, new_n = new.args[len(axes) - 2], new.args[len(axes) - 1]
        # The index of each copy: %m_i = %m_g * TM + i (and %n_j), once per thread.
        for axis, new_axis, factor, position in ((m, new_m, tm, 0), (n, new_n, tn, 1)):
            if factor == 1:
                continue
            name = axis.name_hint or "a"
            new_axis.name_hint = f"{name}_g"
            d0 = AffineExpr.dimension(0)
            for k in range(factor):
                index = apply_op(d0 * factor + k, [new_axis], f"{name}_{'rc'[position]}{k}")
                new.add_op(index)
                for copy, mapping in jammer.maps.items():
                    if copy[position] == k:
                        mapping[axis] = index.result

        run: list[Operation] = []  # top-level ops between reduce loops, replicated together

        def flush() -> None:
            for copy in jammer.copies:
                for child in run:
                    jammer.emit(child, copy, new)
            run.clear()

        for child in old.ops:
            if isinstance(child, loop.ForOp) and child.is_reduce:
                flush()
                jammer.jam(child, new)
            else:
                run.append(child)
        flush()

        extents = [e for _, e, _ in axes]
        extents[-2], extents[-1] = m_extent // tm, n_extent // tn
        tiled = tile.KernelOp(
            op.sym_name.data,
            [(e, b) for e, (_, _, b) in zip(extents, axes, strict=True)],
            list(op.inputs),
            [r.type for r in op.results],
            Region(new),
        )
        tiled.attributes.update(op.attributes)
        tiled.attributes[tile.SCHEDULE] = (
            schedule.replace(tm=tm, tn=tn, planned=0)
            if schedule
            else tile.ScheduleAttr.make(tm, tn, splits=splits)
        )
        rewriter.replace(op, tiled)


@dataclass(frozen=True)
class RegisterTile(ModulePass):
    """Give each thread of a contraction a ``tm x tn`` tile of outputs (see ``tile_factors``)."""

    name = "register-tile"

    tm: int = 0
    """Rows of the tile: the factor of the second-to-last axis (1: leave that axis; 0 with
    tn = 0: the planner's, ``plan_matmul``)."""

    tn: int = 0
    """Columns of the tile: the factor of the last axis (1: leave that axis)."""

    threads_m: int = 0
    """With ``tm``/``tn``: the block's threads along m (and ``threads_n`` along n) of a
    block tile for the later passes, as the planner would record it (0: none)."""

    threads_n: int = 0

    bk: int = 0
    """With ``threads_m``/``threads_n``: the block tile's K chunk, which ``chunk-matmul-k``
    then follows and a K it does not divide is padded to, where that adds exact zeros
    (0: ``DEFAULT_BK``, 8; for sweeps)."""

    resident: int = 0
    """With ``threads_m``/``threads_n``: the blocks an SM its ``__launch_bounds__`` asks
    for (0: what the planner's candidate of that tile asks, else 1; for sweeps)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``) the planner chooses the schedule for."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        by_model = self.tm == 0 and self.tn == 0
        if self.resident < 0:
            raise DiagnosticException(f"register-tile: resident={self.resident} must be >= 0")
        if not by_model and (self.tm < 1 or self.tn < 1):
            raise DiagnosticException(
                f"register-tile: tm={self.tm} and tn={self.tn} must be at least 1 (or both 0: "
                "the planner's)"
            )
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    RegisterTileKernel(
                        self.tm,
                        self.tn,
                        self.threads_m,
                        self.threads_n,
                        self.resident,
                        pass_target(self.name, self.arch),
                        self.bk,
                    )
                ],
                dce_enabled=False,
            ),
            apply_recursively=False,
        ).rewrite_module(op)
