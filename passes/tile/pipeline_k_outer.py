"""``pipeline-k-outer``: copy chunk ``k + 1`` while computing chunk ``k``.

With its slabs double-buffered, a K-outer loop can run as a two-stage software pipeline.
The pass marks the loop ``pipeline``; materialize rotates it. Slabs filled by ordinary
loads (transposed slabs, whose stores scatter) get *register prefetch*: chunk ``k + 1`` is
loaded into registers before chunk ``k``'s compute and stored to the other buffer after
it, one barrier an iteration (``stage_fills``). Slabs filled by ``cp.async`` get a
prologue (chunk 0's copies, committed), a steady state and, through a guard on the last
iteration, its epilogue::

    copy chunk 0 -> buffer 0; commit
    for k in 0..n:
      if k + 1 < n: copy chunk k+1 -> buffer (k+1) % 2     // in the background
      commit; wait until one group is left in flight       // chunk k has landed
      barrier                                              // ... for every thread
      compute chunk k from buffer k % 2
      barrier                                              // buffer k % 2 is free again

The tile level's meaning does not change (the loop reads the same slabs); the kernel
interpreter checks the rotated schedule: a read of an element whose copy is still in
flight, or read by another warp before the barrier, is reported as a race.

Slabs filled by TMA (``tma-copy``) rotate the same way, with mbarriers instead of
groups and one thread issuing each chunk's box copies (``passes/kernel/tma_fills.py``).

Slabs of both kinds in one loop (cp.async for those in the source's order, register
prefetch for transposed ones: ``torch.matmul``'s operands) rotate together, one barrier an
iteration (``stage_fills``, ``mixed``).

The decision is ``pipelines``: a loop of at least two iterations whose slabs are all
double-buffered, and all tma or none.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass

from deplodock.dialects import loop, tile
from deplodock.passes.tile.analysis import refilled_stages

ATTRIBUTE = tile.PIPELINED


def pipelines(for_op: loop.ForOp, stages: list[tile.StageOp]) -> bool:
    """Cost function: every slab of the loop double-buffered, and all filled by TMA or
    none (by ``cp.async``, by loads into registers and stores, or some each way)."""
    if for_op.extent < 2 or not all(s.buffer_count == 2 for s in stages):
        return False
    return len({s.is_tma for s in stages}) == 1


@dataclass(frozen=True)
class PipelineKOuter(ModulePass):
    """Mark K-outer loops to run as a two-stage copy/compute pipeline."""

    name = "pipeline-k-outer"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            for for_op, stages in refilled_stages(kernel):
                if pipelines(for_op, stages):
                    for_op.attributes[ATTRIBUTE] = UnitAttr()
