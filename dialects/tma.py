"""The Tensor Memory Accelerator's rules (sm_90): what a TMA box may be, how the shared
copy is aligned and swizzled. Both the tile dialect (``tile.stage ... tma``, checked
before lowering) and the kernel dialect (``kernel.tma_load``) verify against them, so
they live below both.
"""

from __future__ import annotations

from collections.abc import Sequence

TMA_ALIGNMENT = 128  # bytes: a TMA copy's shared destination (and each piece of it)
TMA_MAX_BOX = 256  # elements: the most a TMA box spans in one dimension
TMA_MAX_RANK = 5
TMA_GLOBAL_ALIGNMENT = 16  # bytes: a TMA source's address and strides
TMA_MAX_TX_BYTES = (1 << 20) - 1  # an mbarrier's transaction count
SWIZZLE_SPANS = (128,)  # bytes: the TMA swizzle modes modelled (SWIZZLE_128B)
SWIZZLE_CHUNK = 16  # bytes: the unit a swizzle moves


def swizzle_repeat(swizzle: int) -> int:
    """Bytes after which a swizzle pattern repeats (128B: 8 rows of 128 bytes); a
    swizzled box starts at a multiple of it, so the pattern starts with its first row."""
    return swizzle * (swizzle // SWIZZLE_CHUNK)


def tma_box_rule(
    box: Sequence[int], element_bytes: int, source_shape: Sequence[int], swizzle: int | None
) -> str | None:
    """What a TMA box of ``box`` (source order) over a dense row-major source of
    ``source_shape`` breaks, or None: the rules ``cuTensorMapEncodeTiled`` holds."""
    if not 1 <= len(box) <= min(TMA_MAX_RANK, len(source_shape)):
        return (
            f"a box of rank {len(box)} over a source of rank {len(source_shape)} "
            f"(TMA copies boxes of rank 1 to {TMA_MAX_RANK})"
        )
    if len(source_shape) > TMA_MAX_RANK:
        return (
            f"a source of rank {len(source_shape)} (TMA maps tensors of rank up to {TMA_MAX_RANK})"
        )
    for extent in box:
        if not 1 <= extent <= TMA_MAX_BOX:
            return f"box extent {extent} is outside TMA's 1 to {TMA_MAX_BOX}"
    row = box[-1] * element_bytes
    if row % 16:
        return f"the box's inner row is {row} bytes, not a multiple of 16"
    if swizzle is not None:
        if swizzle not in SWIZZLE_SPANS:
            spans = ", ".join(map(str, SWIZZLE_SPANS))
            return f"swizzle {swizzle}: the swizzle modes modelled are {spans} bytes"
        if row > swizzle:
            return f"the box's inner row is {row} bytes, wider than the {swizzle}-byte swizzle span"
    stride = element_bytes
    for extent in reversed(source_shape[1:]):
        stride *= extent
        if stride % TMA_GLOBAL_ALIGNMENT:
            return (
                f"a source stride of {stride} bytes, not a multiple of {TMA_GLOBAL_ALIGNMENT} "
                "(TMA's global strides)"
            )
    return None
