"""mark-unroll: ask for ``#pragma unroll`` on the short loops of a scheduled kernel.

A loop whose per-thread trip count is a small constant (a strided loop over a row that a
block covers in a few steps, an inner loop of a few elements) costs a compare and a branch
per iteration and hides independent loads from the scheduler; unrolled, its iterations'
loads issue back to back. Long loops stay rolled: unrolling them only grows the code and
the register pressure, and so does a matmul's K-outer loop (it refills slabs: each
iteration is a whole chunk). The decision is ``unroll_count``; ``max_trips`` overrides its bound.

A K chunk's inner loop (the loop in a K-outer loop that reads its slabs: a register
tile's FMAs) unrolls up to the ``unroll`` steps of the kernel's ``#tile.schedule``
(``schedule.matmul.chunk_unroll``: a whole chunk of 16 for the 128 x 128 tile, which NVRTC
alone unrolls only 4 times; 10% faster measured), else up to ``max_trips``;
``max_chunk_trips`` overrides both.

Unrolled loops nest, and their counts multiply: a one-thread kernel over a small 3-d tile
unrolled 8 x 8 x 8 is 512 copies of its body, which spill (OpInfo's ``masked.var`` did).
A loop is unrolled only while the product of its count and the counts of the unrolled
loops around it stays within ``max_copies``; past it, the loop is marked ``unroll 1``
(NVRTC would otherwise unroll the short constant loop itself).

A long loop (more than ``max_trips`` iterations) is left to NVRTC, which unrolls a
constant loop as it sees fit, unless it is one of several sibling loops over the same
buffer whose loads would not fit in registers: the emitter counts every uniform loop
from 0 so that, unrolled, the loops over a row load the same addresses and the compiler
keeps the row in registers between them. Such a row of more than ``max_row_words``
32-bit words per thread (OpInfo's ``max_unpool3d``: two loops of 144 trips over the same
64-bit indices, 255 registers and 516 bytes spilled) is marked ``unroll 1``: rolled,
each loop reloads from cache instead of spilling. A loop that no sibling re-reads (a
matmul's K loop) is NVRTC's to unroll, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.passes import ModulePass

from deplodock.dialects import loop, tile
from deplodock.dialects.access import element_bytes
from deplodock.dialects.loop import vector_of


def per_thread_trips(op: loop.ForOp | tile.StridedForOp) -> int:
    """The most iterations any one thread runs."""
    if isinstance(op, loop.ForOp):
        return op.extent
    vector = vector_of(op)
    return -(-op.upper.data // (op.step.data * vector))  # ceil: thread 0 runs the most


def unroll_count(trips: int, max_trips: int) -> int | None:
    """Unroll fully when a thread runs 2..max_trips iterations; otherwise leave the loop."""
    return trips if 2 <= trips <= max_trips else None


def enclosing_copies(op: loop.ForOp | tile.StridedForOp, kernel: tile.KernelOp) -> int:
    """How many copies of ``op`` the unrolled loops around it (inside ``kernel``) make."""
    copies = 1
    parent = op.parent_op()
    while parent is not None and parent is not kernel:
        if isinstance(parent, loop.ForOp | tile.StridedForOp) and parent.unroll is not None:
            copies *= parent.unroll.data or per_thread_trips(parent)  # 0: fully
        parent = parent.parent_op()
    return copies


def loaded_words(op: loop.ForOp | tile.StridedForOp) -> int:
    """The 32-bit words one thread loads from memory over all of ``op``'s iterations."""

    def words(body_op) -> int:
        total = 0
        for child in body_op.body.block.ops:
            if isinstance(child, loop.LoadOp):
                total += -(-element_bytes(child.result.type) // 4)
            elif isinstance(child, loop.ForOp | tile.StridedForOp):
                total += words(child)
        return total * per_thread_trips(body_op) * vector_of(body_op)

    return words(op)


def loaded_buffers(op: loop.ForOp | tile.StridedForOp) -> set:
    """The buffers that ``op``'s body (nested loops included) loads from."""
    return {o.buffer for o in op.walk() if isinstance(o, loop.LoadOp)}


def rereads_a_row(op: loop.ForOp | tile.StridedForOp) -> bool:
    """Whether a sibling loop of ``op`` (in the same block) loads a buffer it loads."""
    mine = loaded_buffers(op)
    return any(
        other is not op
        and isinstance(other, loop.ForOp | tile.StridedForOp)
        and mine & loaded_buffers(other)
        for other in op.parent_block().ops
    )


def chunk_unroll_of(kernel: tile.KernelOp) -> int | None:
    schedule = tile.schedule_of(kernel)
    return schedule.unroll.data or None if schedule is not None else None


def is_chunk_loop(op: loop.ForOp | tile.StridedForOp) -> bool:
    """Whether ``op`` walks a K chunk: it sits in a loop whose body stages slabs."""
    parent = op.parent_op()
    return isinstance(parent, loop.ForOp) and any(
        isinstance(o, tile.StageOp) for o in parent.body.block.ops
    )


@dataclass(frozen=True)
class MarkUnroll(ModulePass):
    """Set ``unroll`` on every loop of a tile kernel that ``unroll_count`` accepts."""

    name = "mark-unroll"

    max_trips: int = 8
    """The longest per-thread trip count that is unrolled."""

    max_chunk_trips: int = 0
    """The longest K chunk whose inner loop is unrolled (0: the kernel's ``chunk_unroll``,
    else ``max_trips``; see the module docstring)."""

    max_copies: int = 64
    """The most copies of a loop body that nested unrolling may make."""

    max_row_words: int = 128
    """The most 32-bit words a long loop may load per thread and still be left to NVRTC
    to unroll (see the module docstring)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if not isinstance(kernel, tile.KernelOp):
                continue
            for candidate in kernel.walk():
                if not isinstance(candidate, loop.ForOp | tile.StridedForOp):
                    continue
                if candidate.unroll is not None:
                    continue  # decided before (or by hand): idempotent
                if any(isinstance(o, tile.StageOp) for o in candidate.walk()):
                    continue  # a K-outer loop: its body is a whole chunk, copies and all
                bound = self.max_trips
                if is_chunk_loop(candidate):
                    bound = self.max_chunk_trips or chunk_unroll_of(kernel) or self.max_trips
                count = unroll_count(per_thread_trips(candidate), bound)
                if count is not None and count * enclosing_copies(candidate, kernel) > max(
                    self.max_copies, count
                ):
                    # The nest around it is unrolled enough: keep this one rolled, and say
                    # so (``unroll 1``), or NVRTC unrolls a short constant loop itself.
                    candidate.unroll = IntAttr(1)
                    continue
                if count is not None:
                    candidate.unroll = IntAttr(count)
                elif (
                    per_thread_trips(candidate) > bound
                    and loaded_words(candidate) > self.max_row_words
                    and rereads_a_row(candidate)
                ):
                    candidate.unroll = IntAttr(1)  # see the module docstring: no spills
