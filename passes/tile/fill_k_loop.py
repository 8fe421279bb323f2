"""``fill-k-loop``: how each K loop fills its slabs, applied as the fill planner chose.

A K-outer loop refills its slabs (``stage-inputs``) every iteration. With one copy the
refill must wait until every thread has read the last chunk, and the block idles while
the copy is in flight. The pass applies ``plan_fill`` (``passes/tile/schedule/fill.py``),
loop by loop: two copies of each slab (chunk ``k`` in ``k % 2``), each filled by
``cp.async``, by TMA or by loads into registers, and the loop marked ``pipeline`` to run
as a two-stage software pipeline (materialize rotates it); a matmul kernel records the
answer in its schedule (``fill = ..``)::

    %acc = loop.for %ko = 0 to 8 reduce(add) -> f32 {
      %x_smem = tile.stage %x_b[..] box [128, 8] transpose pad 4 : .. -> memref<8x132xf32>
      %w_smem = tile.stage %w_b[..] box [8, 128] : .. -> memref<8x128xf32>
    %acc = loop.for %ko = 0 to 8 reduce(add) -> f32 attributes {pipeline} {
      %x_smem = tile.stage %x_b[..] box [128, 8] transpose pad 4 buffers 2 : .. -> ..
      %w_smem = tile.stage %w_b[..] box [8, 128] buffers 2 async : .. -> ..

The tile level's meaning is unchanged: a stage is the slab at this iteration's origin,
whatever fills it. Materialize spells the rotation: for cp.async a prologue (chunk 0's
copies, committed), a steady state and, through a guard on the last iteration, its
epilogue; for register prefetch one barrier an iteration; for TMA thread 0's box copies
on mbarriers (``passes/kernel/stage_fills.py``, ``tma_fills.py``)::

    copy chunk 0 -> buffer 0; commit
    for k in 0..n:
      if k + 1 < n: copy chunk k+1 -> buffer (k+1) % 2     // in the background
      commit; wait until one group is left in flight       // chunk k has landed
      barrier                                              // ... for every thread
      compute chunk k from buffer k % 2
      barrier                                              // buffer k % 2 is free again

The kernel interpreter checks the rotated schedule: a read of an element whose copy is
still in flight, or read by another warp before the barrier, is reported as a race.

One pass for what were four (double-buffer, async-copy, tma-copy, pipeline-k-outer):
they were one decision, how the loop is filled, taken in four places. A loop already
decided (a slab with two copies, or the loop marked) is left: the pass is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import tile
from deplodock.passes.tile.analysis import is_pipelined, refilled_stages
from deplodock.passes.tile.schedule.fill import (
    DEFAULT_MAX_BYTES,
    FillOptions,
    no_third_copy,
    plan_fill,
)
from deplodock.target import DEFAULT_ARCH, pass_target


@dataclass(frozen=True)
class FillKLoop(ModulePass):
    """Double-buffer, copy and rotate each K loop's slabs as ``plan_fill`` chooses."""

    name = "fill-k-loop"

    max_bytes: int = DEFAULT_MAX_BYTES
    """Shared memory the kernel's slabs may take once doubled (0: never double)."""

    always: bool = False
    """Double every refilled slab that fits, even in a loop of one chunk (tests)."""

    narrow: bool = False
    """cp.async for transposed slabs too, 4 bytes at a time (slower; tests)."""

    tma: bool = False
    """TMA box copies where a loop's slabs all qualify (off: not yet measured faster)."""

    buffers: int = 2
    """Copies of each slab of a loop filled by cp.async alone: 3 copies two chunks ahead
    with one barrier an iteration (``async3``; in loops of three chunks or more)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``): its shared memory, cp.async (sm_80), TMA (sm_90)."""

    def options(self) -> FillOptions:
        """What the pass's options override of the planner's defaults."""
        return FillOptions(self.max_bytes, self.always, self.narrow, self.tma, self.buffers)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_bytes < 0:
            raise DiagnosticException(f"fill-k-loop: max_bytes={self.max_bytes} must be >= 0")
        if self.buffers not in (2, 3):
            raise DiagnosticException(f"fill-k-loop: buffers={self.buffers} must be 2 or 3")
        target = pass_target(self.name, self.arch)
        options = self.options()
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            for for_op, stages in refilled_stages(kernel):
                if is_pipelined(for_op) or any(s.buffer_count > 1 for s in stages):
                    continue  # decided before
                fill = plan_fill(kernel, for_op, stages, target, options)
                for stage, copy in zip(stages, fill.copies, strict=True):
                    if fill.buffers > 1:
                        stage.buffers = IntAttr(fill.buffers)
                    if copy == "async":
                        stage.async_ = UnitAttr()
                    elif copy == "tma":
                        stage.tma = UnitAttr()
                if fill.pipelined:
                    for_op.attributes[tile.PIPELINED] = UnitAttr()
                if (schedule := tile.schedule_of(kernel)) is not None:
                    kernel.attributes[tile.SCHEDULE] = schedule.replace(fill=fill.kind)


def short(module: ModuleOp, pass_: FillKLoop) -> list[str]:
    """After the pass, when it was asked for three copies (``buffers=3``): each K loop
    left with fewer, and why (``schedule.fill.no_third_copy``; ``deplodock -v`` prints
    them as the pass's notes)."""
    if pass_.buffers != 3:
        return []
    target = pass_target(pass_.name, pass_.arch)
    options = pass_.options()
    notes = []
    for kernel in [k for k in module.walk() if isinstance(k, tile.KernelOp)]:
        for for_op, stages in refilled_stages(kernel):
            if all(s.buffer_count == 3 for s in stages):
                continue
            why = no_third_copy(kernel, for_op, stages, options, target)
            copies = max(s.buffer_count for s in stages)
            kept = "1 copy" if copies == 1 else f"{copies} copies"
            notes.append(f"@{kernel.sym_name.data}: a K loop keeps {kept} of its slabs: {why}")
    return notes
