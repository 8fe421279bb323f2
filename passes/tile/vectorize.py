"""``vectorize``: thread-strided loops take 16-byte (``float4``) steps where memory allows.

A memory-bound kernel reaches the HBM bandwidth only with wide accesses: a warp of scalar
``float`` loads moves 128 bytes per instruction, one of ``float4`` loads 512, so a quarter
of the load instructions keep the same bytes in flight. This pass sets ``vector V`` on a
``tile.strided_for`` (see its docstring: thread ``t`` now takes elements ``V*t .. V*t+V-1``,
then ``V*(t+S) ..``), and the emitter turns every contiguous, aligned access of the body
into one ``V``-wide access (``vector_access`` in ``dialects/access.py`` says which)::

    tile.strided_for %a = %t to 2048 step 256 {            // 8 scalar loads per thread
    tile.strided_for %a = %t to 2048 step 256 vector 4 {   // 2 float4 loads per thread

The meaning is unchanged: the same iterations run, grouped differently among threads (a
reduction adds its partial sums in another order, as any schedule change does).

The decision is ``vector_width``: the widest of ``widths`` (4 by default) that divides the
loop's bound and makes at least one access of the body ``vector_access`` (global memory,
or a staged slab: 16-byte shared-memory reads are conflict-free too); and a
loop in which some global access stays scalar while consecutive threads would stride by
V elements is left alone unless every access is wide (a transposed read gains nothing
and loses coalescing). Loops with inner loops are left alone too: their accesses are not
the loop's direct ones. ``widths=1`` turns the pass off.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from deplodock.dialects import loop, tile
from deplodock.dialects.access import vector_access
from deplodock.dialects.loop import VECTOR_WIDTHS

ELEMENT_BYTES_MAX = 4
"""Vector accesses are emitted for 4-byte elements (float, int); wider ones stay scalar."""


def _global_accesses(op: tile.StridedForOp) -> list[loop.LoadOp | loop.StoreOp]:
    """The body's own loads and stores of kernel buffers (not of a staged slab)."""
    return [
        a
        for a in op.body.block.ops
        if isinstance(a, loop.LoadOp | loop.StoreOp) and not isinstance(a.buffer.owner, Operation)
    ]


def vector_width(op: tile.StridedForOp, widths: tuple[int, ...]) -> int | None:
    """The width to vectorise ``op`` by, or None (see the module docstring)."""
    if op.vector is not None or any(
        isinstance(inner, loop.ForOp | tile.StridedForOp) for inner in op.body.walk()
    ):
        return None
    accesses = [
        a
        for a in op.body.block.ops
        if isinstance(a, loop.LoadOp | loop.StoreOp)
        and a.buffer.type.element_type.bitwidth <= 8 * ELEMENT_BYTES_MAX  # type: ignore[attr-defined]
    ]
    global_ = _global_accesses(op)
    for width in sorted(widths, reverse=True):
        if width not in VECTOR_WIDTHS or op.upper.data % width:
            continue
        wide = [a for a in accesses if vector_access(a, op, width)]
        if not wide:
            continue
        strided = [a for a in global_ if a not in wide and _moves_with(a, op)]
        if not strided:
            return width
    return None


def _moves_with(access: loop.LoadOp | loop.StoreOp, op: tile.StridedForOp) -> bool:
    """Whether the access's address depends on the loop's induction variable."""
    return any(v is op.induction_var for v in access.indices)


@dataclass(frozen=True)
class Vectorize(ModulePass):
    """Set ``vector`` on the thread-strided loops of tile kernels that ``vector_width`` picks."""

    name = "vectorize"

    widths: tuple[int, ...] = (4,)
    """Candidate widths, widest first; ``1`` alone turns the pass off."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for candidate in op.walk():
            if isinstance(candidate, tile.StridedForOp):
                width = vector_width(candidate, tuple(self.widths))
                if width is not None:
                    candidate.vector = IntAttr(width)
