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
steps past the end yield the group's identity (``chunk_reduce._ragged``), and the slabs
are guarded (zeros past the source's end). ``chunk`` overrides the choice (1 turns the
pass off).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Region
from xdsl.ir.affine import AffineExpr
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
from deplodock.dialects.affine_syntax import apply_op
from deplodock.dialects.combine import ONLINE_MAX
from deplodock.passes.tile.analysis import axes_used
from deplodock.passes.tile.chunk_reduce import _ragged
from deplodock.passes.tile.schedule.reduce import walk_chunk


def walks(kernel: tile.KernelOp) -> list[tile.StridedForOp]:
    """The kernel's top-level strided reduce loops that hold an online group."""
    return [
        op
        for op in kernel.body.block.ops
        if isinstance(op, tile.StridedForOp) and op.is_reduce and ONLINE_MAX in op.kinds
    ]


def key_row_bytes(kernel: tile.KernelOp, walk: tile.StridedForOp) -> int | None:
    """Bytes a block's chunk takes per key: of each input the walk loads that some thread
    of the block shares (a thread axis its indices leave out: ``StageKChunks`` stages
    those), its loads times the threads along the other axes that index it (a row's
    scores: one a row of the block); None when only the walk's own threads share the
    inputs (one row a block: nothing to gain)."""
    threads = {a: e for a, e, b in kernel.axes if b == "thread"}
    others = [a for a in threads if a is not walk.start]
    total, shared = 0, False
    for buffer in kernel.input_buffers:
        loads = [o for o in walk.walk() if isinstance(o, loop.LoadOp) and o.buffer is buffer]
        if not loads:
            continue
        used = set().union(*(axes_used(v, kernel) for o in loads for v in o.indices))
        if all(a in used for a in threads):
            continue
        shared = shared or any(a not in used for a in others)
        per_key = len(loads) * element_bytes(buffer.type.element_type)  # type: ignore[attr-defined]
        for axis in used & set(others):
            per_key *= threads[axis]
        total += per_key
    return total if shared else None


class ChunkWalks(RewritePattern):
    def __init__(self, chunk: int):
        self.chunk = chunk

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        for walk in walks(op):
            row = key_row_bytes(op, walk)
            if row is None:
                continue
            extent = walk.upper.data
            chunk = min(self.chunk or walk_chunk(row), extent)
            if chunk > 1:
                self._chunk(walk, chunk, rewriter)

    @staticmethod
    def _chunk(walk: tile.StridedForOp, chunk: int, rewriter: PatternRewriter) -> None:
        name = walk.induction_var.name_hint or "k"
        types = [r.type for r in walk.results]
        inner_body = rewriter.move_region_contents_to_new_regions(walk.body)
        old_iv = inner_body.block.args[0]
        outer_body = Block(arg_types=[IndexType()])
        outer_iv = outer_body.args[0]
        outer_iv.name_hint = f"{name}_o"
        inner_iv = rewriter.insert_block_argument(inner_body.block, 0, IndexType())
        inner_iv.name_hint = f"{name}_i"
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        index = apply_op(d0 * chunk + d1, [outer_iv, inner_iv], name)
        inner_body.block.insert_op_before(index, inner_body.block.first_op)
        old_iv.replace_all_uses_with(index.result)
        rewriter.erase_block_argument(old_iv)
        inner = tile.StridedForOp(walk.start, chunk, walk.step.data, inner_body, walk.kinds, types)
        inner.unroll = walk.unroll
        for new, old in zip(inner.results, walk.results, strict=True):
            new.name_hint = f"{old.name_hint}_c" if old.name_hint else None
        outer_body.add_ops([inner, loop.YieldOp(*inner.results)])
        extent = walk.upper.data
        if extent % chunk:  # the last chunk is short: its steps past the walk add nothing
            _ragged(inner, index.result, extent)
        outer = loop.ForOp(0, -(-extent // chunk), Region(outer_body), walk.kinds, types)
        outer.attributes.update(walk.attributes)
        for new, old in zip(outer.results, walk.results, strict=True):
            new.name_hint = old.name_hint
        rewriter.replace(walk, outer)


@dataclass(frozen=True)
class ChunkWalk(ModulePass):
    """Split attention walks into chunks of keys a block stages once (see the module)."""

    name = "chunk-walk"

    chunk: int = 0
    """Keys per chunk (0: ``walk_chunk`` decides; 1 leaves every walk whole)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.chunk < 0:
            raise DiagnosticException(f"chunk-walk: chunk={self.chunk} must not be negative")
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ChunkWalks(self.chunk)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
