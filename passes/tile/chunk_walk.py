"""``chunk-walk``: walk attention's keys a chunk at a time, so a block can share each chunk.

After ``cooperative-reduce`` and ``blockify-launch`` an attention kernel's walk (the online
group of ``ten.softmax_sum``: a running max, its sum and the value columns) is one strided
loop per row, its threads ``%t`` dealing the keys out; a block holds many rows (queries)
of one head, and every row reads every key and value row of that head from global memory
(L2), once per query. This pass splits the walk into an outer loop over chunks of ``C``
keys and the strided walk of one chunk::

    %m, %s, .. = tile.strided_for %k = %t to 512 step 2 reduce(online_max, online_sum, ..)
        { body(%k) }

    %m, %s, .. = loop.for %k_o = 0 to 8 reduce(online_max, online_sum, ..) {
      %m_part, .. = tile.strided_for %k_i = %t to 64 step 2 reduce(online_max, ..) {
        %k = affine.apply (%k_o * 64 + %k_i)
        body(%k)
      }
      loop.yield %m_part, ..
    }

so ``stage-inputs`` (``StageKChunks``) copies each chunk of the keys and values into
shared memory at the top of the outer body, once for the block, and the rows read it
there. The result is the same walk: a chunk's partial ``(m', a')`` merges into the running
``(m, a)`` by the online rule (a partial is a step, ``combine.py``), and the CUDA emitter
accumulates the inner walk straight into the outer accumulators, the unchunked order.

Which walks: a top-level strided reduce loop with an online group and at least one input
it loads shared by the threads of another thread axis (the block's rows: else there is
nothing to share). The chunk is ``walk_chunk``'s (``schedule.reduce``: the most keys
whose rows fit the budget), or the whole walk when that is shorter (one chunk, staged
once). A walk the chunk does not divide (a prime length) ends with a short chunk whose
steps past the end yield the group's identity (``chunk_reduce.mask_past_end``), and the slabs
are guarded (zeros past the source's end). ``chunk`` overrides the choice (1 turns the
pass off).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.dialects.access import element_bytes
from deplodock.dialects.affine_syntax import expr_linear_form, linear_form
from deplodock.dialects.combine import ONLINE_MAX
from deplodock.passes.tile.analysis import axes_used, chunk_loop, is_chunked, scheduled_walk
from deplodock.passes.tile.chunk_reduce import mask_past_end
from deplodock.passes.tile.schedule.reduce import walk_chunk
from deplodock.target import DEFAULT_ARCH, Target, pass_target


def walks(kernel: tile.KernelOp) -> list[tile.StridedForOp | loop.ForOp]:
    """The kernel's top-level reduce loops that hold an online group: strided (the
    row's threads split its keys) or whole (``split-walk-columns``' lanes walk them all),
    and not chunked yet; none in a walk ``tile-walk`` scheduled."""
    if scheduled_walk(kernel):
        return []
    return [
        op
        for op in kernel.body.block.ops
        if isinstance(op, tile.StridedForOp | loop.ForOp)
        and op.is_reduce
        and ONLINE_MAX in op.kinds
        and not is_chunked(op)
        and (not isinstance(op, loop.ForOp) or op.lower.data == 0)
    ]


def key_row_bytes(kernel: tile.KernelOp, walk: loop.LoopBase) -> int | None:
    """Bytes a block's chunk takes per key: of each input the walk loads that some thread
    of the block shares (a thread axis its indices leave out: ``StageKChunks`` stages
    those), its loads times the threads along the other axes that index it (a row's
    scores: one a row of the block); None when only the walk's own threads share the
    inputs (one row a block: nothing to gain)."""
    threads = {a: e for a, e, b in kernel.axes if b == "thread"}
    others = [a for a in threads if a is not getattr(walk, "start", None)]
    total, shared = 0, False
    for buffer in kernel.input_buffers:
        loads = [o for o in walk.walk() if isinstance(o, loop.LoadOp) and o.buffer is buffer]
        if not loads:
            continue
        used = set().union(*(axes_used(v, kernel) for o in loads for v in o.indices))
        if all(a in used for a in threads) or not all(_stageable(o, kernel) for o in loads):
            continue
        shared = shared or any(a not in used for a in others)
        per_key = len(loads) * element_bytes(buffer.type.element_type)  # type: ignore[attr-defined]
        for axis in used & set(others):
            per_key *= threads[axis]
        total += per_key
    return total if shared else None


def _stageable(load: loop.LoadOp, kernel: tile.KernelOp) -> bool:
    """Whether a slab can serve ``load``: each index is linear, or computed from block
    axes alone (a head ``%a0 floordiv 8`` of a block: ``StageKChunks``' origins)."""
    threads = {a for a, _, b in kernel.axes if b == "thread"}
    forms = [linear_form(v) for v in load.indices]
    for expr in load.map.data.results:
        if None not in forms and expr_linear_form(expr, forms) is not None:  # type: ignore[arg-type]
            continue
        values = [load.indices[d] for d in expr.used_dims()]
        if any(axes_used(v, kernel) & threads for v in values):
            return False
    return True


class ChunkWalks(RewritePattern):
    def __init__(self, chunk: int, target: Target | None = None):
        self.chunk = chunk
        self.target = target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        for walk in walks(op):
            row = key_row_bytes(op, walk)
            if row is None:
                continue
            extent = walk.upper.data
            chunk = min(self.chunk or walk_chunk(row, self.target), extent)
            if chunk > 1:
                self._chunk(walk, chunk, rewriter)

    @staticmethod
    def _chunk(walk, chunk: int, rewriter: PatternRewriter) -> None:
        types = [r.type for r in walk.results]

        def inner(body):
            if isinstance(walk, tile.StridedForOp):
                return tile.StridedForOp(walk.start, chunk, walk.step.data, body, walk.kinds, types)
            return loop.ForOp(0, chunk, body, walk.kinds, types)

        extent = walk.upper.data
        _, chunked, index = chunk_loop(walk, chunk, rewriter, inner, "_c")
        if extent % chunk:  # the last chunk is short: its steps past the walk add nothing
            mask_past_end(chunked, index, extent)


@dataclass(frozen=True)
class ChunkWalk(ModulePass):
    """Split attention walks into chunks of keys a block stages once (see the module)."""

    name = "chunk-walk"

    chunk: int = 0
    """Keys per chunk (0: ``walk_chunk`` decides; 1 leaves every walk whole)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``) whose shared memory long rows' chunks may fill."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.chunk < 0:
            raise DiagnosticException(f"chunk-walk: chunk={self.chunk} must not be negative")
        target = pass_target(self.name, self.arch)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ChunkWalks(self.chunk, target)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
