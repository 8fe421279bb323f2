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

With ``swizzle=true`` the pass also records the swizzle on the stage (``swizzle 128``,
``SWIZZLE_128B``: TMA stores chunk ``j`` of row ``r`` at chunk ``j xor (r mod 8)``), and
every load indexes the swizzled place, which no affine map can say, so it is computed::

    %in_c0_chunk = affine.apply ((%a1_g * 4 mod 32) floordiv 4)
    %in_c0_line = affine.apply (%a2_i mod 8)
    %in_c0_sw = arith.xori %in_c0_chunk, %in_c0_line : index
    %in_c0 = loop.load %x1_smem[%a1_g * 4 floordiv 32, %a2_i, %in_c0_sw * 4 + %a1_g * 4 mod 4]

The interpreters check it like every pass (the tile interpreter un-swizzles a stored
index, the kernel interpreter lands the box swizzled), the kernel verifier holds the
1024-byte alignment the pattern needs. It is off by default: in this project's matmul
schedule TMA slabs (``a[k, m]``, ``b[k, n]``) are read along their rows, consecutive
threads at consecutive addresses, which is conflict-free already, so the xor only costs
instructions; it is for a slab read down its columns, which no pass makes yet, and for
measuring (``test/gpu/tma_check.py``). Only the 128-byte mode is modelled, for slabs of
rank 2 whose row count is a multiple of 8. The decisions are ``splits_for`` and
``swizzles``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, IntAttr, MemRefType, ModuleOp
from xdsl.ir import Operation
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op, index_map_for
from deplodock.dialects.tile import stored_shape
from deplodock.dialects.tma import SWIZZLE_CHUNK, SWIZZLE_SPANS

SWIZZLE_SPAN = 128  # bytes: SWIZZLE_128B


def splits_for(stage: tile.StageOp, span: int) -> int:
    """Cost function: the piece width (elements) for a ``tma`` slab whose inner box row is
    wider than ``span`` bytes and a multiple of it, else 0 (left whole)."""
    if not stage.is_tma or stage.split_width:
        return 0
    element = stage.element_bytes
    width = span // element
    inner = stage.box_shape[-1]
    if width < 1 or inner <= width or inner % width:
        return 0
    return width


def swizzles(stage: tile.StageOp, width: int, span: int) -> bool:
    """Cost function (when asked for): a ``tma`` slab of rank 2 whose stored rows (pieces
    of ``width``, or whole) are ``span`` bytes, with a multiple of ``span / 16`` rows (the
    pattern's repeat), not swizzled yet."""
    if not stage.is_tma or stage.swizzle_bytes or span not in SWIZZLE_SPANS:
        return False
    box = stage.box_shape
    row = (width or stage.split_width or box[-1]) * stage.element_bytes
    return len(box) == 2 and row == span and box[0] % (span // SWIZZLE_CHUNK) == 0


class SplitInner(RewritePattern):
    def __init__(self, span: int, swizzle: bool):
        self.span = span
        self.swizzle = swizzle

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.StageOp, rewriter: PatternRewriter) -> None:
        width = splits_for(op, self.span)
        swizzle = self.swizzle and swizzles(op, width, self.span)
        if not width and not swizzle:
            return
        box = op.box_shape
        width = width or op.split_width
        element = op.result.type.element_type  # type: ignore[attr-defined]
        properties = dict(op.properties)
        if width:
            properties["box"] = ArrayAttr([IntAttr(e) for e in box])
            properties["split"] = IntAttr(width)
        if swizzle:
            properties["swizzle"] = IntAttr(self.span)
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
            results = list(old.results)
            if width and not op.split_width:
                results = [results[-1] // width, *results[:-1], results[-1] % width]
            operands = list(load.indices)
            index_ops: list[Operation] = []
            if swizzle:
                results[-1], index_ops = _swizzled(new, results[-2], results[-1], operands, load)
            moved = loop.LoadOp(new.result, AffineMap(len(operands), 0, tuple(results)), operands)
            moved.result.name_hint = load.result.name_hint
            rewriter.replace(load, [*index_ops, moved], [moved.result])
        rewriter.erase(op)


def _swizzled(
    stage: tile.StageOp, row: AffineExpr, column: AffineExpr, operands: list, load: loop.LoadOp
) -> tuple[AffineExpr, list[Operation]]:
    """The stored column of (``row``, ``column``) in a swizzled slab, over ``operands``
    (extended by the xor's result), and the ops computing it."""
    per_chunk = SWIZZLE_CHUNK // stage.element_bytes
    lines = stage.swizzle_bytes // SWIZZLE_CHUNK
    hint = load.result.name_hint or "in"
    chunk = _apply(column // per_chunk, operands, f"{hint}_chunk")
    line = _apply(row % lines, operands, f"{hint}_line")
    xor = arith.XOrIOp(chunk.result, line.result)
    xor.result.name_hint = f"{hint}_sw"
    operands.append(xor.result)
    moved = AffineExpr.dimension(len(operands) - 1) * per_chunk + column % per_chunk
    return moved, [chunk, line, xor]


@dataclass(frozen=True)
class SplitInnerForSwizzle(ModulePass):
    """Split each TMA slab's rows into pieces of the swizzle span (see ``splits_for``)."""

    name = "split-inner-for-swizzle"

    span: int = SWIZZLE_SPAN
    """Bytes of a piece's row: the swizzle mode's span (128 for SWIZZLE_128B)."""

    swizzle: bool = False
    """Also swizzle the slabs (``swizzles``); off: no slab this project makes is read down
    its columns yet (see the module docstring)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            SplitInner(self.span, self.swizzle), apply_recursively=False
        ).rewrite_module(op)


def _apply(expr: AffineExpr, operands: list, hint: str):
    """``affine.apply`` of ``expr`` over just the operands it uses."""
    map_, used = index_map_for(AffineMap(len(operands), 0, (expr,)), operands)
    return apply_op(map_.results[0], used, hint)
