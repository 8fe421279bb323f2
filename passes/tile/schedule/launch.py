"""The launch planner: how many threads a block of an elementwise or cooperative kernel
gets (``blockify-launch``; a matmul's block is its ``#tile.schedule``'s)."""

from __future__ import annotations

from deplodock.dialects.tile import WARP

DEFAULT_BLOCK_THREADS = 256  # 8 warps: good occupancy for memory-bound kernels on sm_90


def block_threads_for(parallel: int) -> int:
    """Cost function: threads per block for ``parallel`` independent iterations.

    ``DEFAULT_BLOCK_THREADS``, or exactly ``parallel`` when there is less work than that
    (one block, no idle threads, no guard).
    """
    return max(1, min(DEFAULT_BLOCK_THREADS, parallel))


MAX_RAGGED_WASTE = 8  # a ragged last block may recompute at most 1/8 of the rows


def rows_per_block(extent: int, room: int, ragged: bool = False, row_threads: int = 0) -> int:
    """Cost function: rows of a cooperative kernel to share a block, when a row takes
    fewer threads than a block should have: the most (a power of two, at most ``room``)
    that divide the row axis, so no guard is needed (a guard around a combine's barrier
    would deadlock the block). Softmax rows of 128 take a warp each: 8 to a block, 512
    blocks where 4096 one-warp blocks would queue on the SMs' 32-block limit.

    With ``ragged`` (attention's walks: a block's rows share each staged chunk of keys,
    ``chunk-walk``) the rows need not divide the axis: the most rows, a power of two up to
    ``room``, whose last block's rows past the axis (which recompute rows of the first
    block, ``blockify-launch``) are at most ``1 / MAX_RAGGED_WASTE`` of it. A thousand
    queries then go 128 to a block instead of 8. Rows that waste more still fill at least
    a warp."""
    rows = 1
    while rows * 2 <= room and extent % (rows * 2) == 0:
        rows *= 2
    if not ragged:
        return rows
    # A block takes a warp's worth of threads at least (combines shuffle whole warps):
    # the rows of ``row_threads`` threads that make a warp (without it, ``room`` is a
    # default block's rows, a warp an eighth of them).
    fewest = -(-WARP // row_threads) if row_threads else room * WARP // DEFAULT_BLOCK_THREADS
    fewest = max(1, fewest)
    for candidate in (room >> k for k in range(room.bit_length())):
        if candidate <= max(rows, fewest - 1):
            break
        if (-extent % candidate) * MAX_RAGGED_WASTE <= extent:
            return candidate
    return max(rows, fewest)
