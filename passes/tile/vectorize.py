"""``vectorize``: thread-strided loops take 16-byte (``float4``) steps where memory allows.

A memory-bound kernel reaches the HBM bandwidth only with wide accesses: a warp of scalar
``float`` loads moves 128 bytes per instruction, one of ``float4`` loads 512, so a quarter
of the load instructions keep the same bytes in flight. This pass sets ``vector V`` on a
``tile.strided_for`` (see its docstring: thread ``t`` now takes elements ``V*t .. V*t+V-1``,
then ``V*(t+S) ..``), and the emitter turns every contiguous, aligned access of the body
into one ``V``-wide access (``vector_access`` in ``dialects/access.py`` says which)::

    tile.strided_for %a = %t to 2048 step 256 {            // 8 scalar loads per thread
    tile.strided_for %a = %t to 2048 step 256 vector 4 {   // 2 float4 loads per thread

An elementwise kernel has no loop to mark: its innermost axis ``%a`` (extent E) becomes
an axis of groups, extent E / V, and the body moves into a one-trip vector loop over the
group (``group_innermost_axis``), so ``blockify-launch`` then gives each thread a group::

    axes(%a0 : 128 = free, %a1 : 5632 = free) { ..%x_b[0, %a0, %a1].. }
    axes(%a0 : 128 = free, %a1_g : 1408 = free) {
      tile.strided_for %a1 = %a1_g to 5632 step 5632 vector 4 { ..%x_b[0, %a0, %a1].. } }

The pass runs before ``blockify-launch`` (which places the group axis) and before
``stage-inputs`` (whose slab reads keep the contiguous indices they replace).

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
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

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


MAX_VECTOR_REGISTERS = 64
"""Registers a step's widened accesses may hold at once: ``width`` each. A combine of a
decode row's partials loads 66 values a step (the online group), as float4s 264 live
registers, which spilled 3.7 KB of stack; such a loop stays scalar."""


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
        if not wide or width * len(wide) > MAX_VECTOR_REGISTERS:
            continue
        strided = [a for a in global_ if a not in wide and _moves_with(a, op)]
        if not strided:
            return width
    return None


def _moves_with(access: loop.LoadOp | loop.StoreOp, op: tile.StridedForOp) -> bool:
    """Whether the access's address depends on the loop's induction variable (directly or
    through index math inside the loop)."""
    pending, seen = list(access.indices), set()
    while pending:
        value = pending.pop()
        if value is op.induction_var:
            return True
        owner = value.owner
        if isinstance(owner, Operation) and owner not in seen and op.is_ancestor(owner):
            seen.add(owner)
            pending.extend(owner.operands)
    return False


def group_innermost_axis(kernel: tile.KernelOp, widths: tuple[int, ...]) -> tile.KernelOp | None:
    """An elementwise kernel (free axes, no loops) whose last axis ``%a`` (extent E) every
    moving access is contiguous in, rewritten so the axis counts groups of V: extent E / V
    and the body inside ``tile.strided_for %a = %g to E step E vector V`` (one group per
    iteration point). None when ``vector_width`` refuses the loop; ``kernel`` is untouched.
    """
    axes = kernel.axes
    if not axes or any(binding != "free" for _, _, binding in axes):
        return None
    if any(isinstance(op, loop.ForOp | tile.StridedForOp) for op in kernel.body.walk()):
        return None
    candidate = kernel.clone()
    group, extent, _ = candidate.axes[-1]
    block = candidate.body.block
    strided = tile.StridedForOp(group, extent, extent)
    element = strided.induction_var
    element.name_hint = group.name_hint
    group.name_hint = f"{group.name_hint or 'a'}_g"
    for op in list(block.ops):
        op.detach()
        strided.body.block.add_op(op)
    group.replace_uses_with_if(element, lambda use: use.operation is not strided)
    block.add_op(strided)
    width = vector_width(strided, widths)
    if width is None:
        candidate.erase()
        return None
    strided.vector = IntAttr(width)
    extents = [IntAttr(e) for _, e, _ in candidate.axes]
    extents[-1] = IntAttr(extent // width)
    candidate.extents = ArrayAttr(extents)
    return candidate


@dataclass(frozen=True)
class Vectorize(ModulePass):
    """Set ``vector`` on the thread-strided loops of tile kernels that ``vector_width`` picks."""

    name = "vectorize"

    widths: tuple[int, ...] = (4,)
    """Candidate widths, widest first; ``1`` alone turns the pass off."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        widths = tuple(self.widths)
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            grouped = group_innermost_axis(kernel, widths)
            if grouped is not None:
                Rewriter.replace_op(kernel, grouped)
                continue
            for candidate in kernel.walk():
                if isinstance(candidate, tile.StridedForOp):
                    width = vector_width(candidate, widths)
                    if width is not None:
                        candidate.vector = IntAttr(width)
