"""``async-copy``: fill double-buffered slabs with ``cp.async`` (sm_80 and later).

A slab filled by ordinary loads and stores holds each thread until its loads return:
the copy's latency is the block's. ``cp.async`` copies global memory to shared memory
without passing through registers, in the background, in *groups* a thread commits and
later waits for. Only a double-buffered slab gains from it (with one copy the block must
wait for the data before it can use it anyway), so the pass marks those::

    %x_smem = tile.stage %x_b[..] .. buffers 2 : .. -> ..
    %x_smem = tile.stage %x_b[..] .. buffers 2 async : .. -> ..

Materialize spells an async fill as ``kernel.cp_async`` per element (the emitter copies
four at a time, 16 bytes, where both sides are contiguous), ``kernel.cp_async_commit`` and
``kernel.cp_async_wait``. The decision is ``copies_async``, slab by slab: double-buffered,
stored in the source's order (a transposed slab scatters each 16-byte source run over four
rows, so it would be copied 4 bytes at a time: register prefetch does better, ``narrow``
forces it), and a target of sm_80 or later (``arch``). A loop with slabs of both kinds
(``torch.matmul``'s) runs the mixed rotation: cp.async for one, register prefetch for
the other (``stage_fills``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass

from deplodock.dialects import tile
from deplodock.passes.tile.analysis import refilled_stages
from deplodock.target import DEFAULT_ARCH, Target, pass_target


def copies_async(stage: tile.StageOp, target: Target, narrow: bool = False) -> bool:
    """Cost function: a double-buffered slab on a target with cp.async, stored in the
    source's order (16-byte copies). A transposed slab would be copied 4 bytes at a time,
    measured slower than register prefetch (session 3, square 4096: 3947 vs 3031 us
    single-buffered); ``narrow`` takes it anyway (tests). Elements of 4 bytes or more:
    ``cp.async`` copies 4, 8 or 16 bytes, so a half-precision element alone cannot go."""
    return (
        stage.buffer_count == 2
        and target.cp_async
        and stage.element_bytes >= 4
        and (narrow or not stage.is_transposed)
    )


@dataclass(frozen=True)
class AsyncCopy(ModulePass):
    """Mark double-buffered slabs for cp.async fills (see ``copies_async``)."""

    name = "async-copy"

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``); cp.async needs sm_80 or later."""

    narrow: bool = False
    """Also transposed slabs, copied 4 bytes at a time (slower; tests)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = pass_target(self.name, self.arch)
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            for _, stages in refilled_stages(kernel):
                for stage in stages:
                    if copies_async(stage, target, self.narrow):
                        stage.async_ = UnitAttr()
