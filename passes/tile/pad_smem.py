"""``pad-smem``: pad the rows of transposed slabs so their fill does not conflict on banks.

A transposed slab (``stage-inputs`` on a matmul's K chunk) is filled by reading the
source row by row (coalesced, 16 bytes a thread) and writing each element to its column
of the stored array: the four elements a thread reads land in four stored rows, and the
threads of a warp write down a column. With a stored row of a multiple of 32 floats,
every element of a column is in the same shared-memory bank, and the warp's writes to it
serialise. Padding each stored row by ``P`` floats shifts consecutive rows by ``P`` banks.
``P = 4`` keeps every row 16-byte aligned, so the float4 reads along a row stay legal::

    %x_smem = tile.stage %x_b[..] box [128, 8] transpose : .. -> memref<8x128xf32>
    %x_smem = tile.stage %x_b[..] box [128, 8] transpose pad 4 : .. -> memref<8x132xf32>

The loads it serves keep their indices: the padding is never read. The decision is
``pad_for``; the ``pad`` option overrides it (0 removes nothing already padded).
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

from deplodock.dialects import tile

BANKS = 32  # shared-memory banks of 4 bytes
DEFAULT_PAD = 4  # floats: one 16-byte step, so rows stay float4-aligned


def pad_for(stage: tile.StageOp, pad: int) -> int:
    """Cost function: the padding of a stored row, or 0 for none.

    A transposed slab whose stored row is a multiple of the bank count gets ``pad``
    (``DEFAULT_PAD``): its fill writes columns. A slab stored in the source's order is
    filled along its rows and needs none."""
    if not stage.is_transposed or stage.padding:
        return 0
    return pad if stage.box_shape[0] % BANKS == 0 else 0


class PadTransposedSlabs(RewritePattern):
    def __init__(self, pad: int):
        self.pad = pad

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.StageOp, rewriter: PatternRewriter) -> None:
        pad = pad_for(op, self.pad)
        if not pad:
            return
        padded = tile.StageOp(
            op.source,
            op.map.data,
            list(op.indices),
            list(op.box_shape),
            op.is_transposed,
            pad,
            op.is_guarded,
        )
        padded.result.name_hint = op.result.name_hint
        padded.attributes.update(op.attributes)
        rewriter.replace(op, padded)


@dataclass(frozen=True)
class PadSmem(ModulePass):
    """Pad the stored rows of transposed slabs (see ``pad_for``)."""

    name = "pad-smem"

    pad: int = DEFAULT_PAD
    """Floats added to each stored row of a transposed slab."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.pad < 0:
            raise DiagnosticException(f"pad-smem: pad={self.pad} must not be negative")
        PatternRewriteWalker(
            GreedyRewritePatternApplier([PadTransposedSlabs(self.pad)], dce_enabled=False),
        ).rewrite_module(op)
