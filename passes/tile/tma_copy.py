"""``tma-copy``: fill double-buffered K-chunk slabs with TMA box copies (sm_90). Off by
default (``enable=true`` turns it on): it has not been measured faster yet.

``cp.async`` (``async-copy``) has every thread copy 16 bytes at a time and commit and wait
for its own groups; the Tensor Memory Accelerator copies a whole box (up to 256 elements
a dimension) for one instruction of one thread, computing the addresses itself, and
completes the bytes on an mbarrier that the readers wait on, so no thread spends issue
slots or registers on the copy::

    %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] buffers 2 async : .. -> memref<16x64xf32>
    %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] buffers 2 tma : .. -> memref<16x64xf32>

Materialize spells a ``tma`` loop as a prologue (barrier init, chunk 0's copies), and per
iteration thread 0's ``kernel.mbarrier_arrive_expect_tx`` and ``kernel.tma_load`` of chunk
``k + 1`` into the other buffer, every thread's ``kernel.mbarrier_wait`` for chunk ``k``
(parity ``(k / 2) mod 2``), the compute, and a barrier before the buffer is refilled
(``passes/kernel/tma_fills.py``). The kernel interpreter proves the schedule race-free.

The decision is ``copies_by_tma``, for all of a loop's slabs or none (a loop's chunk
completes on one barrier): a target of sm_90 or later (``arch``); a double-buffered slab
in a loop of at least two chunks; stored in the source's order, no pad (TMA writes the
box as it lies in global memory: a transposed slab, ``x[m, k]`` for threads that walk m,
cannot be TMA'd); within TMA's box rules (``tma.tma_box_rule``) and a multiple of 128
bytes. So both operands must be staged in their own order for a whole loop to qualify:
``torch.matmul(a.t(), b)`` (``a[k, m]``, ``b[k, n]``) does, ``x @ w.T`` does not.

It runs after ``async-copy`` and takes over its marks (a slab is filled by one or the
other), so with the pass off the ``cp.async`` schedule stands as it was.

**Default off.** Whether TMA beats cp.async here is not measured yet (the engineer with
the GPU measures it, ``test/gpu/tma_check.py``); until then ``enable`` is false and the
pass changes nothing, so the default schedule is the measured one.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass

from deplodock.dialects import loop, tile
from deplodock.dialects.tma import TMA_ALIGNMENT, tma_box_rule
from deplodock.passes.tile.analysis import refilled_stages
from deplodock.target import DEFAULT_ARCH, Target, pass_target


def copies_by_tma(stage: tile.StageOp, target: Target, for_op: loop.ForOp | None = None) -> bool:
    """Cost function: a slab TMA can fill and that gains from it: sm_90+, double-buffered
    in a loop of two or more chunks (the copy of the next chunk overlaps the compute),
    stored in the source's order without pad, a box within TMA's rules and a multiple of
    128 bytes (each buffer starts aligned)."""
    if not target.tma or stage.buffer_count != 2 or stage.is_transposed or stage.padding:
        return False
    if for_op is not None and for_op.extent < 2:
        return False
    source = stage.source.type
    element = stage.element_bytes
    box = stage.box_shape
    if tma_box_rule(box, element, source.get_shape(), None) is not None:  # type: ignore[attr-defined]
        return False
    return stage.size_bytes() // 2 % TMA_ALIGNMENT == 0


@dataclass(frozen=True)
class TmaCopy(ModulePass):
    """Mark double-buffered slabs for TMA fills (see ``copies_by_tma``); off unless
    ``enable``."""

    name = "tma-copy"

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``); TMA needs sm_90 or later."""

    enable: bool = False
    """Off by default: not yet measured faster than cp.async (see the module docstring)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = pass_target(self.name, self.arch)
        if not self.enable:
            return
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            for for_op, stages in refilled_stages(kernel):
                if all(copies_by_tma(stage, target, for_op) for stage in stages):
                    for stage in stages:
                        stage.async_ = None
                        stage.tma = UnitAttr()
