"""``split-inner-for-swizzle``: store a TMA slab's rows in pieces as wide as the swizzle
span, each piece a TMA box of its own.

TMA's swizzle modes (which permute the 16-byte chunks of each row of a box as it lands so
that reading a column of the slab touches every shared-memory bank) need the box's inner
row to be at most the span: 128 bytes, 32 floats, for ``SWIZZLE_128B``. A K-chunk slab of
``b[k, n]`` with a block tile 64 wide has rows of 256 bytes. So its inner dimension is
split into pieces of the span, stored one after the other, each landing by its own copy
in its own 128-byte aligned part of the slab::

    %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] buffers 2 tma : .. -> memref<16x64xf32>
    %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] box [16, 64] buffers 2 tma split 32
                 : .. -> memref<2x16x32xf32>

and every load it serves indexes the stored layout: ``%x1_smem[%k, %n]`` becomes
``%x1_smem[%n floordiv 32, %k, %n mod 32]``. Materialize issues one ``kernel.tma_load``
per piece (``passes/kernel/tma_fills.py``).

What is built: the split (several boxes a chunk), proved by the interpreters like every
pass. What remains: the swizzle itself. The kernel level has it (``kernel.tma_load ..
swizzle 128`` lands each row's chunks permuted, the interpreter models it, the runtime
encodes it), but the slab's loads would have to index with the same XOR pattern
(16-byte chunk ``c`` of row ``r`` at ``c xor (r mod 8)``), which affine maps cannot say;
and in this project's matmul schedule TMA slabs are read along their rows (``a[k, m]``,
``b[k, n]``: consecutive threads, consecutive addresses), which is conflict-free without
it. So the pass records no swizzle on the stage yet; its decision is ``splits_for``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, MemRefType, ModuleOp
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from deplodock.dialects import loop, tile
from deplodock.dialects.tile import stored_shape

SWIZZLE_SPAN = 128  # bytes: SWIZZLE_128B


def splits_for(stage: tile.StageOp, span: int) -> int:
    """Cost function: the piece width (elements) for a ``tma`` slab whose inner box row is
    wider than ``span`` bytes and a multiple of it, else 0 (left whole)."""
    if not stage.is_tma or stage.split_width:
        return 0
    element = max(1, int(getattr(stage.source.type.element_type, "bitwidth", 32)) // 8)  # type: ignore[attr-defined]
    width = span // element
    inner = stage.box_shape[-1]
    if width < 1 or inner <= width or inner % width:
        return 0
    return width


class SplitInner(RewritePattern):
    def __init__(self, span: int):
        self.span = span

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.StageOp, rewriter: PatternRewriter) -> None:
        width = splits_for(op, self.span)
        if not width:
            return
        box = op.box_shape
        element = op.result.type.element_type  # type: ignore[attr-defined]
        properties = dict(op.properties)
        properties["box"] = ArrayAttr([IntAttr(e) for e in box])
        properties["split"] = IntAttr(width)
        new = tile.StageOp.create(
            operands=list(op.operands),
            result_types=[MemRefType(element, stored_shape(box, False, 0, width))],
            properties=properties,
            attributes=dict(op.attributes),
        )
        new.result.name_hint = op.result.name_hint
        rewriter.insert(new, InsertPoint.before(op))
        for use in list(op.result.uses):
            load = use.operation
            assert isinstance(load, loop.LoadOp), load
            old = load.map.data
            results = tuple(new.stored_index(list(old.results)))
            moved = loop.LoadOp(new.result, AffineMap(old.num_dims, 0, results), list(load.indices))
            moved.result.name_hint = load.result.name_hint
            rewriter.replace(load, moved)
        rewriter.erase(op)


@dataclass(frozen=True)
class SplitInnerForSwizzle(ModulePass):
    """Split each TMA slab's rows into pieces of the swizzle span (see ``splits_for``)."""

    name = "split-inner-for-swizzle"

    span: int = SWIZZLE_SPAN
    """Bytes of a piece's row: the swizzle mode's span (128 for SWIZZLE_128B)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SplitInner(self.span), apply_recursively=False).rewrite_module(op)
