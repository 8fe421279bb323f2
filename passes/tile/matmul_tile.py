"""The matmul cost model: one place that picks a contraction's tile sizes.

A matmul ``out[m, n] = sum_k x[m, k] * w[k, n]`` on a GPU without tensor cores (fp32 stays
exact fp32) is the classic shared-memory SGEMM: a block owns a ``BM x BN`` tile of the
output, its ``Tm x Tn`` threads each a ``TM x TN`` register tile (``BM = TM * Tm``), and
the K loop walks chunks of ``BK``: each chunk of both operands is staged in shared memory
once and read from there by every thread that needs it.

``matmul_plan`` chooses among a few shapes and a number of K splits: a larger tile
reuses each loaded element more (``TM * TN`` FMAs per ``TM + TN`` shared loads in a
thread, ``BM * BN`` per ``BM + BN`` global loads in a block) but makes fewer blocks, and a
grid of fewer blocks than the H200 has SMs leaves SMs idle (wave quantisation). Splitting K
across blocks (``split-matmul-k``) makes more blocks, at the price of writing and reading
back partial sums. ``estimate_seconds`` prices each choice; the cheapest wins. Shapes that
do not divide are never taken: the schedule has no guards, because a barrier under a
guard would deadlock the block.

Register budget: 8 x 8 accumulators plus a column and a row of operands are about 100
registers a thread, under the 255 ``__launch_bounds__(256)`` allows; shared memory is
``2 * BK * (BM + BN)`` floats a chunk (8 KB for 128 x 128 x 8), far under the 227 KB.

The passes read the decision from the kernel: ``register-tile`` records it as the
``block_tile = array<i64: Tm, Tn, BK>`` attribute beside ``register_tile = array<i64: TM,
TN>``; ``chunk-matmul-k`` and ``blockify-launch`` follow it. Their options override it.
``split-matmul-k`` decides first and leaves its tile on the kernel of partial sums as
``matmul_tile = array<i64: TM, TN, Tm, Tn, BK>`` for ``register-tile`` to take.
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
    MatmulTile(8, 8, 16, 16, 8),  # 128 x 128: the most reuse
    MatmulTile(8, 8, 16, 8, 8),  # 128 x 64, 128 threads: the 8 x 8 thread tile, finer grids
    MatmulTile(8, 8, 8, 16, 8),  # 64 x 128, 128 threads
    MatmulTile(4, 4, 16, 16, 16),  # 64 x 64
    MatmulTile(4, 4, 8, 16, 16),  # 32 x 64, 128 threads
)
"""Largest first. The K chunk is the one measured faster for the tile on the H200: 16 for
the 4 x 4 tiles (square 1024: 128 -> 78 us; TinyLlama q_proj at S=128: 157 -> 71 us), 8
for 8 x 8 (square 4096: 3551 -> 3030 us). The 128-thread 8 x 8 tiles (session 5) keep the
big tile's FMAs per shared load with half its blocks' size: on the mid-size projections
they beat 128 x 128 by 10-20% (TinyLlama gate at S=128: 106 -> 89 us)."""

RESIDENT = {
    (128, 128, 256): (2, 2),
    (128, 64, 128): (3, 4),
    (64, 128, 128): (3, 4),
    (64, 64, 256): (2, 2),
    (32, 64, 128): (4, 4),
}
"""Blocks of a tile an SM holds at once, by ``(block_m, block_n, threads)``: as NVRTC 13.0
allocates registers (the 8 x 8 thread tile takes 127-129 registers in 256 threads, 141
in 128; the 4 x 4 one 87-89), and when ``__launch_bounds__`` caps them at 128 a thread
(``min_blocks_per_sm``). Only the 128-thread 8 x 8 tiles gain a block from the cap; for the
others it was measured neutral or slower (session 5 probe)."""

EFFICIENCY = {
    (128, 128): (0.60, 0.85),
    (128, 64): (0.45, 0.78, 0.85, 0.90),
    (64, 128): (0.45, 0.78, 0.85, 0.90),
    (64, 64): (0.56, 0.60, 0.62),
    (32, 64): (0.25, 0.45, 0.50, 0.53),
}
"""Fraction of an SM's fp32 peak (cuBLAS's rate) a block tile reaches with 1, 2, ..
of its blocks resident on the SM (the last entry for more): a second resident block
hides the latency the first one waits on. Fitted on the H200 to sweeps of the generated
kernels over block tile x K splits on projection shapes of TinyLlama and Qwen2.5-7B
(S = 32..512) and x @ w.T at 4096, with register prefetch (``K_OVERHEAD`` and
``HBM_BYTES_PER_S`` fitted with it). The sweeps, their data and the check:
``docs/bench/h200-2026-11-30-s4/matmul-sweep/``, ``docs/bench/h200-2026-11-30-s5/``."""

SM_FLOPS = 51e12 / tile.NUM_SMS  # cuBLAS's fp32 GEMM rate on the H200, per SM
HBM_BYTES_PER_S = 2.0e12  # what a partial-sum round trip streams at, fitted with the above
KERNEL_LAUNCH_S = 3e-6  # the combine kernel's launch and tail
K_OVERHEAD = 32  # a block's fill of its first chunk and its epilogue, in K elements
MIN_SPLIT_K = 128  # K a split keeps at least: 8+ chunks to pipeline over
MAX_SPLITS = 32
CAPPED_REGISTERS = 128  # a thread's registers when ``min_blocks_per_sm`` asks for more blocks


def _resident(c: MatmulTile) -> tuple[int, int]:
    return RESIDENT.get((c.block_m, c.block_n, c.threads), (1, 1))


def min_blocks_per_sm(c: MatmulTile, blocks: int) -> int:
    """``__launch_bounds__``'s minimum blocks per SM for a grid of ``blocks`` blocks of
    ``c``: the capped residency (``RESIDENT``, at ``CAPPED_REGISTERS``) when the grid has
    more blocks than fit uncapped, else 1 (no cap). Measured on the H200 (session 5): with
    896 blocks of 128 x 64 the cap made Qwen's down projection at S=128 486 -> 440 us;
    with 352, which fit uncapped, it cost 1-4%."""
    uncapped, capped = _resident(c)
    return capped if capped > uncapped and blocks > uncapped * tile.NUM_SMS else 1


def _efficiency(c: MatmulTile, resident: int) -> float:
    """``EFFICIENCY`` of the block tile with ``resident`` of its blocks on each SM; a tile
    never measured counts as the worst."""
    by_count = EFFICIENCY.get((c.block_m, c.block_n), (min(e[0] for e in EFFICIENCY.values()),))
    return by_count[min(resident, len(by_count)) - 1]


def estimate_seconds(c: MatmulTile, m: int, n: int, k: int, batch: int, splits: int) -> float:
    """The cost model: the busiest SM's blocks (whole blocks: wave quantisation), run as
    many at a time as the SM holds (``RESIDENT``, after ``min_blocks_per_sm``), each round
    at the tile's efficiency for its count; plus, when K is split, writing and re-reading
    the partial sums and one more launch."""
    blocks = batch * splits * (m // c.block_m) * (n // c.block_n)
    resident = max(_resident(c)[0], min_blocks_per_sm(c, blocks))
    rounds, rest = divmod(-(-blocks // tile.NUM_SMS), resident)
    block_s = 2 * c.block_m * c.block_n * (k // splits + K_OVERHEAD) / SM_FLOPS
    seconds = rounds * resident * block_s / _efficiency(c, resident)
    if rest:
        seconds += rest * block_s / _efficiency(c, rest)
    if splits > 1:
        seconds += 2 * 4 * splits * batch * m * n / HBM_BYTES_PER_S + KERNEL_LAUNCH_S
    return seconds


def _fits(c: MatmulTile, m: int, n: int, k: int, splits: int) -> bool:
    part = k // splits
    return (
        m % c.block_m == 0
        and n % c.block_n == 0
        and k % splits == 0
        and part % c.bk == 0
        and part >= 2 * c.bk
        and (splits == 1 or part >= MIN_SPLIT_K)
    )


def matmul_plan(
    m: int, n: int, k: int, batch: int = 1, split: bool = True
) -> tuple[MatmulTile, int] | None:
    """Cost function: the tile and the number of K splits (``split-matmul-k``) for an
    ``m x n`` output with reduction ``k`` (``batch`` independent such products), the
    fastest by ``estimate_seconds``; None to leave the contraction to the default
    schedule (no tile divides it). ``split=False``: no K split (a kernel that cannot)."""
    best: tuple[float, int, MatmulTile, int] | None = None
    for rank, c in enumerate(CANDIDATES):
        splits = 1
        while splits <= (MAX_SPLITS if split else 1):
            if _fits(c, m, n, k, splits):
                key = (estimate_seconds(c, m, n, k, batch, splits), rank, c, splits)
                if best is None or key[:2] < best[:2]:
                    best = key
            splits *= 2
    return (best[2], best[3]) if best is not None else None


def matmul_tile(m: int, n: int, k: int, batch: int = 1) -> MatmulTile | None:
    """The tile ``matmul_plan`` picks for a product that is not split."""
    plan = matmul_plan(m, n, k, batch, split=False)
    return plan[0] if plan is not None else None


PLANNED_TILE = "matmul_tile"
"""Attribute ``split-matmul-k`` leaves for ``register-tile``: ``array<i64: TM, TN, Tm, Tn,
BK>``."""


def planned_tile_of(kernel: tile.KernelOp) -> MatmulTile | None:
    attr = kernel.attributes.get(PLANNED_TILE)
    if isinstance(attr, DenseArrayBase):
        return MatmulTile(*(int(v) for v in attr.get_values()))
    return None


def planned_tile_attr(choice: MatmulTile) -> DenseArrayBase:
    return DenseArrayBase.from_list(
        i64, [choice.tm, choice.tn, choice.threads_m, choice.threads_n, choice.bk]
    )


MIN_BLOCKS = "min_blocks_per_sm"
"""Attribute ``register-tile`` leaves beside ``block_tile``: ``min_blocks_per_sm``'s answer
for the kernel's grid, the emitter's ``__launch_bounds__`` minimum."""


def block_tile_of(kernel: tile.KernelOp) -> tuple[int, int, int] | None:
    """``(Tm, Tn, BK)`` when the cost model chose a block tile for ``kernel``."""
    attr = kernel.attributes.get(BLOCK_TILE)
    if isinstance(attr, DenseArrayBase):
        tm, tn, bk = attr.get_values()
        return int(tm), int(tn), int(bk)
    return None


def block_tile_attr(choice: MatmulTile) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [choice.threads_m, choice.threads_n, choice.bk])
