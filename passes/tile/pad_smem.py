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

A kernel whose products run on tensor cores (``mma-contract``) reads its slabs by
fragments: lane ``(g, t)`` of a warp reads row ``g`` and column ``t`` of an ``[m][k]``
slab, or row ``t`` and column ``g`` of a ``[k][n]`` one, and no pitch that is a multiple
of 32 keeps those 32 reads on 32 banks. ``fragment_pad`` takes the smallest pad (in 16-byte
steps, so cp.async rows stay aligned) for which every load of the slab is conflict-free,
found by evaluating the loads' indices for the 32 lanes of a warp (``tile.mma``'s layout:
the kernel's last two thread axes are ``g`` and ``t``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
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

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import eval_map

BANKS = 32  # shared-memory banks of 4 bytes
DEFAULT_PAD = 4  # floats: one 16-byte step, so rows stay float4-aligned


def fragment_pad(stage: tile.StageOp) -> int:
    """The smallest pad (a multiple of 4 floats below 32) that puts a warp's fragment reads
    of ``stage`` on 32 banks, 0 where none does or the kernel is not on tensor cores."""
    kernel = loop.enclosing_kernel(stage)
    schedule = tile.schedule_of(kernel) if isinstance(kernel, tile.KernelOp) else None
    if schedule is None or not schedule.mma.data or stage.is_tma:
        return 0
    threads = [a for a, _, b in kernel.axes if b == "thread"]  # type: ignore[union-attr]
    lane = np.arange(32)
    values = {threads[-2]: lane // 4, threads[-1]: lane % 4}
    loads = [u.operation for u in stage.result.uses if isinstance(u.operation, loop.LoadOp)]
    if not loads:
        return 0
    box = list(stage.box_shape)
    for pad in range(0, BANKS, 4):
        shape = tile.stored_shape(box, stage.is_transposed, pad)
        strides = [int(np.prod(shape[k + 1 :])) for k in range(len(shape))]
        if all(len(set(_offsets(load, values, strides) % BANKS)) == BANKS for load in loads):
            return pad
    return 0


def _offsets(load: loop.LoadOp, values: dict, strides: list[int]) -> np.ndarray:
    """A warp's stored offsets of ``load`` (every operand but the lane's axes at 0)."""
    args = [values.get(v, np.zeros(1, np.int64)) for v in load.indices]
    index = eval_map(load.map.data, args)
    return sum(np.asarray(i) * s for i, s in zip(index, strides, strict=True)) + np.zeros(
        32, np.int64
    )


def pad_for(stage: tile.StageOp, pad: int) -> int:
    """Cost function: the padding of a stored row, or 0 for none.

    A transposed slab whose stored row is a multiple of the bank count gets ``pad``
    (``DEFAULT_PAD``): its fill writes columns. A slab stored in the source's order is
    filled along its rows and needs none."""
    if stage.padding:
        return 0
    fragments = fragment_pad(stage)
    if fragments:
        return fragments
    if not stage.is_transposed:
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
