"""The launch planner: how many threads a block of an elementwise or cooperative kernel
gets (``blockify-launch``; a matmul's block is its ``#tile.schedule``'s)."""

from __future__ import annotations

DEFAULT_BLOCK_THREADS = 256  # 8 warps: good occupancy for memory-bound kernels on sm_90


def block_threads_for(parallel: int) -> int:
    """Cost function: threads per block for ``parallel`` independent iterations.

    ``DEFAULT_BLOCK_THREADS``, or exactly ``parallel`` when there is less work than that
    (one block, no idle threads, no guard).
    """
    return max(1, min(DEFAULT_BLOCK_THREADS, parallel))


def rows_per_block(extent: int, room: int) -> int:
    """Cost function: rows of a cooperative kernel to share a block, when a row takes
    fewer threads than a block should have: the most (a power of two, at most ``room``)
    that divide the row axis, so no guard is needed (a guard around a combine's barrier
    would deadlock the block). Softmax rows of 128 take a warp each: 8 to a block, 512
    blocks where 4096 one-warp blocks would queue on the SMs' 32-block limit."""
    rows = 1
    while rows * 2 <= room and extent % (rows * 2) == 0:
        rows *= 2
    return rows
