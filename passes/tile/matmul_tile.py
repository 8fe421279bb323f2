"""The matmul cost model: one place that picks a contraction's tile sizes.

A matmul ``out[m, n] = sum_k x[m, k] * w[k, n]`` on a GPU without tensor cores (fp32 stays
exact fp32) is the classic shared-memory SGEMM: a block owns a ``BM x BN`` tile of the
output, its ``Tm x Tn`` threads each a ``TM x TN`` register tile (``BM = TM * Tm``), and
the K loop walks chunks of ``BK``: each chunk of both operands is staged in shared memory
once and read from there by every thread that needs it.

``matmul_tile`` chooses among a few shapes, largest first: a larger tile reuses each
loaded element more (``TM * TN`` FMAs per ``TM + TN`` shared loads in a thread, ``BM * BN``
per ``BM + BN`` global loads in a block) but makes fewer blocks, and a grid of fewer blocks
than the H200 has SMs leaves SMs idle (wave quantisation). So the first shape that divides
the problem and still gives every SM a block wins; when none does, the one with the most
blocks. Shapes that do not divide are never taken: the schedule has no guards, because a
barrier under a guard would deadlock the block.

Register budget: 8 x 8 accumulators plus a column and a row of operands are about 100
registers a thread, under the 255 ``__launch_bounds__(256)`` allows; shared memory is
``2 * BK * (BM + BN)`` floats a chunk (8 KB for 128 x 128 x 8), far under the 227 KB.

The passes read the decision from the kernel: ``register-tile`` records it as the
``block_tile = array<i64: Tm, Tn, BK>`` attribute beside ``register_tile = array<i64: TM,
TN>``; ``chunk-matmul-k`` and ``blockify-launch`` follow it. Their options override it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, i64

from deplodock.dialects import tile

BLOCK_TILE = "block_tile"
"""Attribute of a register-tiled kernel: ``array<i64: Tm, Tn, BK>`` (see the docstring)."""

DEFAULT_BK = 8  # 2 float4 loads of each operand row a chunk; 16 rows of 128 per block fill


@dataclass(frozen=True)
class MatmulTile:
    tm: int  # rows of a thread's register tile
    tn: int  # columns of a thread's register tile
    threads_m: int  # threads of a block along m
    threads_n: int  # threads of a block along n
    bk: int = DEFAULT_BK  # K elements staged per chunk

    @property
    def block_m(self) -> int:
        return self.tm * self.threads_m

    @property
    def block_n(self) -> int:
        return self.tn * self.threads_n

    @property
    def threads(self) -> int:
        return self.threads_m * self.threads_n


CANDIDATES = (
    MatmulTile(8, 8, 16, 16),  # 128 x 128: the most reuse
    MatmulTile(4, 8, 16, 16),  # 64 x 128
    MatmulTile(4, 4, 16, 16),  # 64 x 64
    MatmulTile(4, 4, 8, 16),  # 32 x 64, 128 threads
)


def matmul_tile(m: int, n: int, k: int, batch: int = 1) -> MatmulTile | None:
    """Cost function: the tile of an ``m x n`` output with reduction ``k`` (``batch``
    independent such products), or None to leave the contraction to the default schedule.
    """
    fitting = [
        c
        for c in CANDIDATES
        if m % c.block_m == 0 and n % c.block_n == 0 and k % c.bk == 0 and k >= 2 * c.bk
    ]
    if not fitting:
        return None
    for candidate in fitting:
        if batch * (m // candidate.block_m) * (n // candidate.block_n) >= tile.NUM_SMS:
            return candidate
    return max(fitting, key=lambda c: (m // c.block_m) * (n // c.block_n))


def block_tile_of(kernel: tile.KernelOp) -> tuple[int, int, int] | None:
    """``(Tm, Tn, BK)`` when the cost model chose a block tile for ``kernel``."""
    attr = kernel.attributes.get(BLOCK_TILE)
    if isinstance(attr, DenseArrayBase):
        tm, tn, bk = attr.get_values()
        return int(tm), int(tn), int(bk)
    return None


def block_tile_attr(choice: MatmulTile) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [choice.threads_m, choice.threads_n, choice.bk])
