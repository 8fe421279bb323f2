"""``chunk-matmul-k``: split a tiled contraction's K loop into K-outer x K-inner chunks.

A register-tiled matmul (``register-tile``) runs one long K loop per thread. To stage the
operands in shared memory, the block needs a unit of K it copies at once: this pass splits
each top-level reduce loop into an outer loop over chunks of ``BK`` and an inner loop over
one chunk, so ``stage-inputs`` can put a chunk of each operand at the top of the outer
body::

    %acc = loop.for %k = 0 to 2048 reduce(add) -> f32 { body(%k) }

    %acc = loop.for %k_o = 0 to 256 reduce(add) -> f32 {
      %part = loop.for %k_i = 0 to 8 reduce(add) -> f32 {
        %k = affine.apply (%k_o * 8 + %k_i)
        body(%k)
      }
      loop.yield %part : f32
    }

Each accumulator kind is kept (add, max, ...), so the result is the same reduction, in
chunks: the interpreters add each chunk's partial sum to the outer accumulator (exact up
to rounding), and the CUDA emitter accumulates the inner loop straight into the outer
accumulators, which is the unchunked loop's order, bit for bit.

The decision is ``chunk_of``: a kernel whose ``#tile.schedule`` has a ``k_chunk`` (the
planner's ``BK``, ``plan_matmul``) takes it; the ``bk`` option chunks every register-tiled kernel;
a loop whose extent ``BK`` does not divide, or that would get a single chunk, is left,
unless the chunk is the whole loop and the kernel has a block tile (the planner's chunk
of a short K, ``schedule.matmul.tile_for``): then it is one chunk, so ``stage-inputs``
stages each operand's slab of the whole K once (``%k_o = 0 to 1``).
The pass is idempotent: a chunked loop's body is a loop, not a multiple of ``BK`` long.
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
from deplodock.passes.tile.analysis import (
    chunk_loop,
    is_chunked,
    register_tile_of,
    top_level_reduces,
)


def chunk_of(kernel: tile.KernelOp, reduce: loop.ForOp, bk: int) -> int | None:
    """Cost function: the chunk of ``reduce`` in ``kernel``, or None to leave it whole."""
    if register_tile_of(kernel) is None or is_chunked(reduce) or reduce.lower.data != 0:
        return None
    if bk == 0:
        bk = tile.schedule_of(kernel).k_chunk.data  # type: ignore[union-attr]
        if bk == 0:
            return None
    extent = reduce.extent
    if extent == bk and _block_tiled(kernel):
        return bk  # one chunk: its operands staged whole, once
    return bk if extent % bk == 0 and extent >= 2 * bk else None


def _block_tiled(kernel: tile.KernelOp) -> bool:
    """Whether ``kernel``'s schedule has a block tile: then a chunk as long as the loop
    (the planner's whole K, ``schedule.matmul.tile_for``) is one chunk, whose slabs
    ``stage-inputs`` fills once; without one, such a chunk is no chunking."""
    schedule = tile.schedule_of(kernel)
    return schedule is not None and schedule.block_threads is not None


def _record_chunk(kernel: tile.KernelOp, bk: int) -> None:
    """The schedule says the chunk the kernel got (an option's, when it overrode the
    plan's); a whole-chunk unroll follows it."""
    schedule = tile.schedule_of(kernel)
    if schedule is not None and schedule.k_chunk.data != bk:
        unroll = bk if schedule.unroll.data else 0
        kernel.attributes[tile.SCHEDULE] = schedule.replace(k_chunk=bk, unroll=unroll)


class ChunkKLoops(RewritePattern):
    def __init__(self, bk: int):
        self.bk = bk

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        for reduce in top_level_reduces(op):
            bk = chunk_of(op, reduce, self.bk)
            if bk is not None:
                self._chunk(reduce, bk, rewriter)
                _record_chunk(op, bk)

    @staticmethod
    def _chunk(reduce: loop.ForOp, bk: int, rewriter: PatternRewriter) -> None:
        types = [r.type for r in reduce.results]
        chunk_loop(
            reduce,
            bk,
            rewriter,
            lambda body: loop.ForOp(0, bk, body, reduce.kinds, types),
            "_part",
        )


@dataclass(frozen=True)
class ChunkMatmulK(ModulePass):
    """Split the K loop of register-tiled contractions into chunks (see ``chunk_of``)."""

    name = "chunk-matmul-k"

    bk: int = 0
    """K elements per chunk (0: the cost model's ``BK``, for kernels it tiled)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.bk < 0:
            raise DiagnosticException(f"chunk-matmul-k: bk={self.bk} must not be negative")
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ChunkKLoops(self.bk)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
