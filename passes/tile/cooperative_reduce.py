"""``cooperative-reduce``: let the threads of a block share the reductions of one row.

A tile kernel whose top-level body holds reduce loops (RMSNorm's sum of squares,
softmax's max and sum) leaves each row to one thread unless the threads cooperate. When
cooperation pays (``cooperation_threads``), the kernel gets a new ``thread`` axis ``%t``
of ``T`` threads and its top level is rewritten so the threads split the row::

    %p = tile.strided_for %k = %t to K step T reduce(add) -> f32 { .. }   // a partial sum
    %s = tile.combine add %p across %t : f32                             // every thread: the sum
    tile.strided_for %j = %t to N step T { .. loop.store .. }            // a share of the row

* each top-level reduce ``loop.for`` becomes a strided reduce loop followed by one
  ``tile.combine`` per accumulator (per online group: ``combine.groups``), so every
  thread ends with the full result;
* each top-level free ``loop.for`` becomes a strided free loop (its iterations are
  independent, so dealing them out is exact);
* scalar ops between the loops run redundantly in every thread (they are cheap, and every
  thread needs their values);
* a top-level op that writes memory outside a loop (the ``out[..] = acc`` of a
  reduce-only kernel) would be done by every thread with the same value: it is guarded to
  thread 0 with ``scf.if`` so exactly one thread writes.

Legality, separate from cost: the kernel has no thread axis yet (so the pass is
idempotent), and no buffer is written by one top-level op and read by another (threads
would then read elements other threads write, with no barrier between them).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
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
from xdsl.traits import MemoryWriteEffect
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.dialects.combine import groups
from deplodock.dialects.tile import WARP
from deplodock.passes.tile.analysis import is_contraction, top_level_reduces, walks_columns
from deplodock.passes.tile.schedule.reduce import DEFAULT_THREADS, cooperation_threads, pow2_floor
from deplodock.target import DEFAULT_ARCH, Target, pass_target


def parallel_extent(kernel: tile.KernelOp) -> int:
    """How many rows run in parallel: the product of the kernel's axes."""
    count = 1
    for _, extent, _ in kernel.axes:
        count *= extent
    return count


def _buffers(op: Operation, kind: type[Operation]) -> set[SSAValue]:
    return {o.buffer for o in op.walk() if isinstance(o, kind)}  # type: ignore[attr-defined]


def has_cross_thread_hazard(kernel: tile.KernelOp) -> bool:
    """Whether a buffer is written by one top-level op and read by another."""
    ops = list(kernel.body.block.ops)
    stores = [_buffers(op, loop.StoreOp) for op in ops]
    loads = [_buffers(op, loop.LoadOp) for op in ops]
    return any(stores[i] & loads[j] for i in range(len(ops)) for j in range(len(ops)) if i != j)


def _writes_memory(op: Operation) -> bool:
    return any(o.has_trait(MemoryWriteEffect) for o in op.walk())


def _merges_loaded_values(reduce: loop.ForOp) -> bool:
    """Whether every value ``reduce`` yields is loaded as it is: it merges stored partials
    (``chunk-reduce``'s combine), computing nothing of its own."""
    yielded = reduce.body.block.last_op
    return yielded is not None and all(isinstance(v.owner, loop.LoadOp) for v in yielded.operands)


class CooperateOnRows(RewritePattern):
    """Add a thread axis and deal each top-level loop's iterations out over it."""

    def __init__(self, threads: int = 0, force: bool = False, target: Target | None = None):
        self.threads = threads
        self.force = force
        self.target = target

    def _decide(self, op: tile.KernelOp) -> int:
        reduces = top_level_reduces(op)
        if not reduces or any(b == "thread" for _, _, b in op.axes):
            return 0
        if tile.is_register_tiled(op):
            return 0  # register-tile gave each thread a tile of outputs and its own K loop
        if has_cross_thread_hazard(op):
            return 0
        # A row's free loops count as much as its reduces: chunk-reduce leaves a kernel
        # whose reduce is over a few partials but whose normalising loop is long.
        loops = [o for o in op.body.block.ops if isinstance(o, loop.ForOp)]
        longest = max(r.extent for r in loops)
        columns = all(walks_columns(op, r) for r in reduces)
        chosen = cooperation_threads(
            longest,
            parallel_extent(op),
            is_contraction(op, reduces),
            len(reduces),
            self.target,
            columns,
            reads=len(loops),
            accumulators=max(len(r.kinds) for r in reduces),
            partials=all(_merges_loaded_values(r) for r in reduces),
        )
        if 0 < chosen < WARP and op.axes[-1][1] % (WARP // chosen):
            # Rows of fewer lanes than a warp share blocks only when their axis divides
            # into whole warps (``launch.rows_per_block``; shuffles need every lane of a
            # warp): 263 rows of 8 lanes would be blocks of 8 threads. A warp a row.
            chosen = WARP
        if self.force and not chosen:
            chosen = min(DEFAULT_THREADS, max(32, pow2_floor(longest)))
        if chosen and self.threads:
            chosen = self.threads
        return chosen

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        threads = self._decide(op)
        if not threads:
            return
        old_axes = [(e, b) for _, e, b in op.axes]
        body = rewriter.move_region_contents_to_new_regions(op.body)
        block = body.block
        t = rewriter.insert_block_argument(block, 0, IndexType())
        t.name_hint = "t"
        first: SSAValue | None = None
        pending: list[Operation] = []  # a run of top-level writes, guarded together
        for child in list(block.ops):
            if isinstance(child, loop.ForOp):
                self._flush(pending, first, rewriter)
                self._strided(child, t, threads, rewriter)
            elif _writes_memory(child):
                if first is None:
                    first = self._is_thread_zero(t, block, rewriter)
                pending.append(child)
            else:
                self._flush(pending, first, rewriter)
        self._flush(pending, first, rewriter)
        axes = [(threads, "thread"), *old_axes]
        new = tile.KernelOp(
            op.sym_name.data, axes, list(op.inputs), [r.type for r in op.results], body
        )
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)

    @staticmethod
    def _is_thread_zero(t: SSAValue, block: Block, rewriter: PatternRewriter) -> SSAValue:
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        zero.result.name_hint = "c0"
        cond = arith.CmpiOp(t, zero.result, "eq")
        cond.result.name_hint = "first"
        rewriter.insert([zero, cond], InsertPoint.at_start(block))
        return cond.result

    @staticmethod
    def _flush(pending: list[Operation], cond: SSAValue | None, rewriter) -> None:
        """Move a run of top-level writes under ``scf.if %t == 0``."""
        if not pending:
            return
        assert cond is not None
        guard = scf.IfOp(cond, [], Region(Block()))
        rewriter.insert(guard, InsertPoint.before(pending[0]))
        for write in pending:
            write.detach()
            guard.true_region.block.add_op(write)
        guard.true_region.block.add_op(scf.YieldOp())
        pending.clear()

    @staticmethod
    def _strided(for_op: loop.ForOp, t: SSAValue, threads: int, rewriter: PatternRewriter) -> None:
        """``loop.for`` → ``tile.strided_for`` over ``t`` (+ one combine per result)."""
        body = rewriter.move_region_contents_to_new_regions(for_op.body)
        lower = for_op.lower.data
        if lower:
            # Strided loops count from the thread index; shift back inside the body.
            iv = body.block.args[0]
            new_iv = rewriter.insert_block_argument(body.block, 0, IndexType())
            new_iv.name_hint = iv.name_hint
            shift = apply_op(AffineExpr.dimension(0) + lower, [new_iv], None)
            rewriter.insert(shift, InsertPoint.at_start(body.block))
            rewriter.replace_all_uses_with(iv, shift.result)
            rewriter.erase_block_argument(iv)
        strided = tile.StridedForOp(
            t, for_op.extent, threads, body, for_op.kinds, [r.type for r in for_op.results]
        )
        strided.attributes.update(for_op.attributes)
        kinds, partials = for_op.kinds, strided.results
        combines = [
            tile.CombineOp([kinds[i] for i in group], [partials[i] for i in group], t)
            for group in groups(kinds)
        ]
        combined = [r for c in combines for r in c.results]  # clause order: groups are runs
        for old, partial, result in zip(for_op.results, partials, combined, strict=True):
            partial.name_hint = f"{old.name_hint}_part" if old.name_hint else None
            result.name_hint = old.name_hint
        rewriter.replace(for_op, [strided, *combines], combined)


@dataclass(frozen=True)
class CooperativeReduce(ModulePass):
    """Split each long (or too few) row reductions over a block's threads."""

    name = "cooperative-reduce"

    threads: int = 0
    """Threads per row (a power of two up to 1024); 0: ``cooperation_threads`` decides."""

    force: bool = False
    """Cooperate on every kernel with a top-level reduce, whatever the cost function says."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``) whose SMs the blocks are to fill."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.threads and (self.threads & (self.threads - 1) or self.threads > 1024):
            raise DiagnosticException(
                f"cooperative-reduce: threads={self.threads} must be a power of two up to 1024"
            )
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [CooperateOnRows(self.threads, self.force, pass_target(self.name, self.arch))],
                dce_enabled=False,
            ),
            apply_recursively=False,
        ).rewrite_module(op)
