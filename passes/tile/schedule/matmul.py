"""The matmul planner: the one function that chooses a contraction's schedule.

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
back partial sums. ``estimate_seconds`` prices each choice; the cheapest wins. A tile
that does not divide the shape is priced on the shape rounded up to it (``padded_extents``,
times ``EDGE_COST``, at most ``MAX_EDGE_WASTE`` of wasted work): the kernel is then padded
and its accesses guarded (``passes/tile/edge_tiles.py``), since a schedule cannot guard
its edge blocks' threads away (a barrier under a guard would deadlock the block).

Register budget: the 8 x 8 tile takes 127-159 registers a thread (64 accumulators, a
column and a row of operands, the next chunk prefetched), under the 255 a thread may
have; a *capped* candidate's ``__launch_bounds__`` asks for 4 blocks an SM, which holds it
to 128 (``min_blocks_per_sm``). Shared memory is ``2 * BK * (BM + BN)`` floats a chunk
(8 KB for 128 x 128 x 8), far under the 227 KB.

The answer is a ``#tile.schedule`` (``dialects/tile.py``) on the kernel, decided by
``plan_matmul`` from the shape and the target: ``split-matmul-k`` asks first and leaves
the plan (``planned``) on its kernel of partial sums, ``register-tile`` asks for the
others (or takes the plan) and applies the register tile; ``chunk-matmul-k``,
``blockify-launch``, ``mark-unroll`` and the emitter's ``__launch_bounds__`` follow the
schedule's fields. The passes' options override it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.traits import MemoryWriteEffect

from deplodock.dialects import combine, tile
from deplodock.passes.tile.analysis import (
    is_contraction,
    reads_only_inputs,
    shares_loads_across,
    stored_both_ways,
    top_level_reduces,
)
from deplodock.passes.tile.edge_tiles import (
    align_operands,
    pad_contraction,
    pads_k_exactly,
    round_up,
)
from deplodock.target import Target, target_for

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


@dataclass(frozen=True)
class Candidate:
    """A block tile the cost model may choose, with what was measured of it on the H200."""

    tile: MatmulTile
    resident: int  # blocks of it an SM holds at once
    capped: bool  # ``__launch_bounds__`` asks for ``resident`` blocks (128 registers a thread)
    efficiency: tuple[float, ...]  # fraction of SM_FLOPS with 1, 2, .. blocks resident
    batched: bool = True  # also for batched products (attention's); see CANDIDATES
    mixed: bool | None = None  # only for operands stored both ways (True), never (False)
    unrolled: bool = False  # its K chunk's loop unrolled whole (``chunk_unroll``)
    single: bool = True  # also for a single product (batch 1); see CANDIDATES
    whole_k: bool = False  # a short K is one chunk, staged whole (``tile_for``)
    provisional: bool = False  # not measured yet: only where no measured candidate fits


_SMALL = {"single": False, "whole_k": True, "provisional": True}
_EFF_4X4_64 = (0.16, 0.31, 0.39, 0.46, 0.50, 0.54, 0.57, 0.59)  # the 32 x 64's at r / 2
_EFF_2X2_64 = tuple(e / 2 for e in _EFF_4X4_64)  # twice the shared loads per FMA

CANDIDATES = (
    # Operands stored both ways (``torch.matmul``'s; the mixed rotation), batched too:
    Candidate(MatmulTile(8, 8, 16, 16, 16), 2, True, (0.75, 0.93), mixed=True, unrolled=True),
    Candidate(MatmulTile(8, 8, 16, 8, 16), 3, False, (0.69, 0.85, 0.95), mixed=True),
    Candidate(MatmulTile(8, 8, 8, 16, 16), 3, False, (0.69, 0.85, 0.95), mixed=True),
    # Both transposed (``x @ w.T``: projections, attention's Q.K^T), or either:
    Candidate(MatmulTile(8, 8, 16, 16, 8), 2, False, (0.71, 0.91), mixed=False),  # 128 x 128
    Candidate(MatmulTile(8, 8, 16, 8, 16), 3, False, (0.72, 0.87, 0.90), False, False),
    Candidate(MatmulTile(8, 8, 8, 16, 16), 3, False, (0.72, 0.82, 0.89), False, False),
    Candidate(MatmulTile(8, 8, 16, 8, 8), 4, True, (0.58, 0.95, 0.98, 0.86), False),  # 128 x 64
    Candidate(MatmulTile(8, 8, 8, 16, 8), 4, True, (0.39, 0.89, 0.93, 0.90), False),  # 64 x 128
    Candidate(MatmulTile(4, 4, 16, 16, 16), 2, False, (0.53, 0.63)),  # 64 x 64
    Candidate(MatmulTile(4, 4, 8, 16, 16), 4, False, (0.40, 0.46, 0.54, 0.59)),  # 32 x 64
    # 128 x 128 in 128 threads, 16 x 8 a thread (after the others: their indices stay):
    Candidate(MatmulTile(16, 8, 8, 16, 8), 2, False, (0.65, 0.95), False, False),
    # Batches of small products (``bmm`` of 32 x 33 by 33 x 31), a short K staged whole;
    # provisional efficiencies (see below):
    Candidate(MatmulTile(4, 4, 16, 8, 16), 4, False, (0.31, 0.46, 0.54, 0.59), **_SMALL),  # 64 x 32
    Candidate(MatmulTile(4, 4, 8, 8, 16), 16, False, _EFF_4X4_64, **_SMALL),  # 32 x 32
    Candidate(MatmulTile(2, 2, 16, 16, 16), 4, False, (0.23, 0.30), **_SMALL),  # 32 x 32
    Candidate(MatmulTile(2, 2, 8, 8, 16), 16, False, _EFF_2X2_64, **_SMALL),  # 16 x 16
)
"""Largest first (ties go to the earlier). Each tile's K chunk is the one measured faster
on the H200, with its residency as NVRTC 13.0 allocates registers:

* 128 x 128 (8 x 8 a thread, 256 threads, 127-129 registers): 2 blocks an SM; a K chunk
  of 16 was 7% slower than 8 (session 5 sweep).
* 128 x 128 in 128 threads (16 x 8 a thread, 217 registers, 2 blocks an SM; session 32,
  ``docs/bench/h200-2026-12-06-s32/``, an H100 host): twice the FMAs a shared load of the
  8 x 8 tile's, for single products only (measured on projections). Where each block
  streams its own slab of a large weight from memory (an LM head: M = 128, one block row)
  the 256-thread tile waits on its loads (TinyLlama's LM head 525 us, 0.67 of its
  efficiency) and this one does not (383 us; cuBLAS 358); fitted on four shapes
  (efficiency 0.91-0.92 at 2 blocks on the LM heads and TinyLlama's gate at S=512, 0.65
  for a lone block on q at S=512), and slower than the 8 x 8 tiles where they fill 3
  blocks an SM (gate at S=512: 379 against 306 us), which the model sees. Its rate at two
  blocks raised to 0.95 by session 36's sweep with K split in 3 and 6 (H100 host,
  ``docs/bench/h100-2026-12-07-s36/``; the fit of all six sweeps gives 0.95): with K
  split so that the rounds of two an SM are whole it is the fastest variant of
  TinyLlama's gate and q at S=512 (in 3: 278.9 us against the 8 x 8 tile's 306.9; in 4:
  103.1 against 119.5), as cuBLAS runs them (Nsight Compute: a 128 x 128 tile in 128
  threads, K in 3, 528 blocks).
* 128 x 64 and 64 x 128 with the 8 x 8 thread tile in 128 threads (session 5): the big
  tile's FMAs per shared load in blocks half its size, for the mid-size projections
  (TinyLlama gate at S=128: 106 -> 82 us). Twice each: with a K chunk of 16 (159
  registers, 3 blocks an SM), 17% faster than a chunk of 8 uncapped; and, for grids of
  more blocks than that, capped at 128 registers for 4 blocks an SM, which a chunk of 16
  cannot take without spilling (then 10% slower than 8), but a chunk of 8 can (Qwen down
  at S=128: 486 -> 440 us against uncapped). Only for unbatched products (``batched``):
  they were measured on projections, and attention's batched products at S=512 got
  slower with them (Qwen's decoder layer 6.6 -> 9.7 ms).
* Products whose operands are stored both ways (``torch.matmul``'s ``x[m, k] @ w[k, n]``,
  ``mixed``: their K loop runs the mixed rotation, cp.async for ``w``, register prefetch
  for ``x``) have tiles of their own, fitted to the session 6 sweep
  (``docs/bench/h200-2026-11-30-s6/``): the 128 x 128 tile with a chunk of 16 unrolled
  whole and capped at 2 blocks an SM (square 4096: 3034 -> 2969 us), and the 128-thread
  8 x 8 tiles for batched ones too (P.V shaped products: 37.3 -> 32.3 us at S=512).
* 64 x 64 and 32 x 64 (4 x 4 a thread, 87-95 registers): a chunk of 16 (square 1024:
  128 -> 78 us; TinyLlama q_proj at S=128: 157 -> 71 us); a cap was measured slower.
  The 32 x 64 tile's lone block (a last round of one block an SM) at 0.40, not the
  fitted 0.31 (session 36, H100 host): Qwen's gate at S=32 (32 x 18944 x 3584) in 4
  splits leaves most SMs a ninth block alone and ran 183 us, in 3 (seven an SM, no lone
  block) 195 us, which 0.31 priced the other way round.
* Batches of small products (issue 19's ``bmm/small``, 8192 products of 32 x 33 by 33 x
  31, took the default schedule: no tile above within ``MAX_EDGE_WASTE``, 0.42x eager):
  64 x 32 (the 32 x 64's mirror), 32 x 32 (4 x 4 in 8 x 8 threads, or 2 x 2 in 16 x 16)
  and 16 x 16 (2 x 2 in 8 x 8), a block a product or a few. Such a product is bound by
  reading its operands (``estimate_seconds``' memory term), so K is one chunk where it
  is short (``whole_k``: ``tile_for``), its slabs filled once, coalesced, behind one
  barrier, not refilled every 16 steps with a memory latency each. Only for batches
  (``single=False``): a single small product is a few blocks, bound by its launch, and
  the suite's single products keep the tiles measured on them. Not measured yet
  (``provisional``), so only for products no measured tile fits, which had the default
  schedule (session 4's lesson: tiles measured on projections made attention's batched
  products slower). Their ``efficiency``: the 4 x 4 tiles' from the 32 x 64 tile's (the
  nearest measured, session 6) at as many threads an SM (``r`` blocks of 64 threads as
  ``r / 2`` of its 128: ``_EFF_4X4_64``; the 64 x 32 as its mirror), the 2 x 2 tiles'
  half the 4 x 4's at as many threads (a shared load an FMA where 4 x 4 needs half of
  one: the shared-memory pipe bounds them); ``resident`` from NVRTC 13.0's registers
  (53-56 a thread: 18 blocks of 64 threads an SM, 16 taken; 4 of 256). The sweep
  measures them (``python -m deplodock.bench.sweep --shape matmul:8192x32x31x33``).

``efficiency``: the fraction of an SM's fp32 peak (cuBLAS's rate) the tile reaches with
1, 2, .. of its blocks resident (the last entry for more): a second resident block hides
the latency the first one waits on. Fitted (with ``K_OVERHEAD`` and ``HBM_BYTES_PER_S``)
to a sweep of the generated kernels over block tile x K chunk x K splits on the projection
shapes of TinyLlama and Qwen2.5-7B (S = 32..512) and the 4096 products; the sweep, its
data: ``docs/bench/h200-2026-11-30-s5/``, ``-s6/``; the sweep and the fit are
``python -m deplodock.bench.sweep`` (``--check FILE --fit``)."""

HBM_BYTES_PER_S = 2.46e12  # what a partial-sum round trip streams at on the H200, fitted
HBM_FIT_SHARE = HBM_BYTES_PER_S / 4.25e12  # of its copy bandwidth: other targets scale by it
KERNEL_LAUNCH_S = 3e-6  # the combine kernel's launch and tail
K_OVERHEAD = 14  # a block's fill of its first chunk and its epilogue, in K elements
MIN_SPLIT_K = 128  # K a split keeps at least: 8+ chunks to pipeline over
MAX_SPLITS = 512  # a long K over few output tiles (64 x 64 x 262147: 256 splits of 1024)
SPLIT_COUNTS = tuple(
    sorted({b << i for b in (1, 3) for i in range(MAX_SPLITS.bit_length()) if b << i <= MAX_SPLITS})
)
"""The K splits priced: powers of two and three times them, so a grid can fill whole rounds
of an SM's blocks (176 tiles two an SM on 132 SMs: 1.33 rounds unsplit, 4 in thirds)."""


def min_blocks_per_sm(choice: MatmulTile) -> int:
    """``__launch_bounds__``'s minimum blocks per SM for a kernel of the tile: the
    candidate's residency when it is capped, else 1 (no cap; a tile an option gave)."""
    return next((c.resident for c in CANDIDATES if c.tile == choice and c.capped), 1)


def chunk_unroll(choice: MatmulTile) -> int | None:
    """The K steps of a chunk ``mark-unroll`` unrolls for a kernel of the tile: the whole
    chunk when the candidate was measured faster so (``unrolled``), else None (its rule).
    Measured on the H200 (session 6 sweep, chunks of 16): the 256-thread 128 x 128 tile
    10% faster unrolled whole; the 128-thread 8 x 8 tiles 3-10% slower; 4 x 4 neutral."""
    whole = any(c.tile == choice and c.unrolled for c in CANDIDATES)
    return choice.bk if whole else None


ELEMENT_BYTES = 4  # fp32 operands (16-bit ones are computed in f32: then it overprices)

WHOLE_K_BYTES = 16 * 1024
"""A ``whole_k`` candidate's K is one chunk when both its slabs of the whole K fit this:
14 such blocks still share an SM's 228 KB, so one block's fill overlaps the others'
compute (a 32 x 32 tile: K up to 64; 16 x 16: 128)."""


def tile_for(c: Candidate, k: int, splits: int = 1) -> MatmulTile:
    """The tile ``c`` takes for a reduction of ``k`` in ``splits``: for a ``whole_k``
    candidate of an unsplit K whose slabs fit ``WHOLE_K_BYTES``, its K chunk is the whole
    K (``chunk-matmul-k`` makes one chunk of it, ``stage-inputs`` stages both operands
    once: a short K has nothing to pipeline, and its blocks, bound by memory latency,
    wait once instead of once a chunk; K is not padded); else its own chunk."""
    t = c.tile
    if c.whole_k and splits == 1 and (t.block_m + t.block_n) * k * ELEMENT_BYTES <= WHOLE_K_BYTES:
        return MatmulTile(t.tm, t.tn, t.threads_m, t.threads_n, k)
    return t


def memory_seconds(
    t: MatmulTile, m: int, n: int, k: int, batch: int, target: Target, read: tuple[int, int, int]
) -> float:
    """What the blocks of tile ``t`` over an ``m x n`` output (padded extents) move, at
    ``target.bandwidth``: each block reads its rows of ``x`` and columns of ``w`` over
    the whole K and writes its outputs, of the product's own extents ``read`` (a padded
    element is not read). An upper bound of the device-memory traffic (a slab read again
    by another block may come from L2) that matters where it exceeds the FMAs' time:
    small and skinny products, bound by reading their operands."""
    rm, rn, rk = read
    tiles_m, tiles_n = m // t.block_m, n // t.block_n
    moved = batch * (rm * rk * tiles_n + rk * rn * tiles_m + rm * rn) * ELEMENT_BYTES
    return moved / target.bandwidth


def estimate_seconds(
    c: Candidate,
    m: int,
    n: int,
    k: int,
    batch: int,
    splits: int,
    target: Target | None = None,
    read: tuple[int, int, int] | None = None,
) -> float:
    """The cost model on ``target`` (None: sm_90): the busiest SM's blocks (whole blocks:
    wave quantisation), run ``c.resident`` at a time, each round at the tile's efficiency
    for its count (an SM at ``target.sm_flops``, cuBLAS's fp32 rate on the H200); or, when
    longer, the blocks' memory traffic (``memory_seconds``: the slower of the two bounds a
    kernel whose resident blocks overlap their loads with their FMAs); plus, when K is
    split, writing and re-reading the partial sums and one more launch. ``m, n, k`` may be
    padded to the tile (``padded_extents``); ``read``: the product's own (None: the same)."""
    target = target or target_for()
    t = c.tile
    blocks = batch * splits * (m // t.block_m) * (n // t.block_n)
    rounds, rest = divmod(-(-blocks // target.sm_count), c.resident)
    block_s = 2 * t.block_m * t.block_n * (k // splits + K_OVERHEAD) / target.sm_flops

    def efficiency(resident: int) -> float:
        return c.efficiency[min(resident, len(c.efficiency)) - 1]

    seconds = rounds * c.resident * block_s / efficiency(c.resident)
    if rest:
        seconds += rest * block_s / efficiency(rest)
    seconds = max(seconds, memory_seconds(t, m, n, k, batch, target, read or (m, n, k)))
    if splits > 1:
        rate = HBM_BYTES_PER_S if target.measured else HBM_FIT_SHARE * target.bandwidth
        seconds += 2 * 4 * splits * batch * m * n / rate + KERNEL_LAUNCH_S
    return seconds


EDGE_COST = 1.05
"""What guarded edge tiles (``passes/tile/edge_tiles.py``) cost beyond their padded work:
a tile that divides the problem wins a tie."""

K_EDGE_COST = 1.0
"""The same for a K padded alone (to whole chunks a split: 2048 in 3 splits of 688): its
loads guarded, its stores not; fitted beside ``EDGE_COST`` (``bench.sweep --fit``: 0.99
on the six sweeps with session 36's, where 2048 in 3 ran as fast as its work says)."""

MAX_EDGE_WASTE = 2.0
"""Padded work (``M * N * K`` rounded up) at most this many times the real: a product
much smaller than the tile (a matrix-vector product, the seed's 16 x 16) is no tiled
matmul's."""


def padded_extents(
    c: MatmulTile, m: int, n: int, k: int, splits: int = 1, pad_k: bool = True
) -> tuple[int, int, int]:
    """``(M, N, K)`` rounded up to the block tile and ``splits`` K chunks (K only when
    ``pad_k``: padding K must add exact zeros, ``edge_tiles.pads_k_exactly``)."""
    k_padded = round_up(k, splits * c.bk) if pad_k else k
    return round_up(m, c.block_m), round_up(n, c.block_n), k_padded


def _fits(c: MatmulTile, m: int, n: int, k: int, splits: int, whole: bool = False) -> bool:
    """Whether tile ``c`` divides the extents, in 2 or more K chunks a split (``whole``:
    one chunk of the whole K, ``tile_for``)."""
    part = k // splits
    return (
        m % c.block_m == 0
        and n % c.block_n == 0
        and k % splits == 0
        and part % c.bk == 0
        and (part >= 2 * c.bk or (whole and part == c.bk))
        and (splits == 1 or part >= MIN_SPLIT_K)
    )


def _fills(c: Candidate, m: int, n: int, batch: int, target: Target) -> bool:
    """A capped candidate only for a grid that fills the block its cap makes room for:
    with fewer blocks the cap only costs (1-4% measured, session 5). Edge blocks count."""
    blocks = batch * -(-m // c.tile.block_m) * -(-n // c.tile.block_n)
    return not c.capped or blocks > (c.resident - 1) * target.sm_count


def matmul_plan(
    m: int,
    n: int,
    k: int,
    batch: int = 1,
    mixed: bool = False,
    split: bool = True,
    target: Target | None = None,
    pad: bool = True,
    pad_k: bool = True,
) -> tuple[MatmulTile, int] | None:
    """Cost function: the tile and the number of K splits (``split-matmul-k``) for an
    ``m x n`` output with reduction ``k`` (``batch`` independent such products; ``mixed``:
    operands stored both ways, ``analysis.stored_both_ways``), the fastest by
    ``estimate_seconds``; None to leave the contraction to the default schedule (no tile
    fits it; a ``provisional`` candidate only where no measured one fits).
    ``split=False``: no K split (a kernel that cannot). ``target``: the GPU
    (``deplodock.target``; None: sm_90), whose SM count and rate the estimate uses.
    ``pad``: a tile that does not divide M, N (and K, when ``pad_k``) is priced on the
    extents rounded up to it (``padded_extents``: guarded edge tiles), times
    ``EDGE_COST``."""
    target = target or target_for()
    best: tuple[bool, float, int, MatmulTile, int] | None = None
    for rank, c in enumerate(CANDIDATES):
        if not (c.batched or batch == 1) or not (c.single or batch > 1):
            continue
        if c.mixed not in (None, mixed):
            continue
        for splits in SPLIT_COUNTS if split else (1,):
            priced = candidate_seconds(c, m, n, k, batch, splits, target, pad, pad_k)
            if priced is not None and _fills(c, m, n, batch * splits, target):
                key = (c.provisional, priced[0], rank, priced[1], splits)
                if best is None or key[:3] < best[:3]:
                    best = key
    return (best[3], best[4]) if best is not None else None


def candidate_seconds(
    c: Candidate,
    m: int,
    n: int,
    k: int,
    batch: int,
    splits: int,
    target: Target | None = None,
    pad: bool = True,
    pad_k: bool = True,
) -> tuple[float, MatmulTile] | None:
    """``c`` in ``splits`` as ``matmul_plan`` prices it for the shape: the estimate on the
    extents padded to its tile (``tile_for``), times ``EDGE_COST`` when padded
    (``K_EDGE_COST`` when K alone is), and the tile; None where it does not fit (a split
    too short, more than ``MAX_EDGE_WASTE``).
    Whether the candidate is for the shape's kind (``batched``, ``single``, ``mixed``)
    and its grid (``_fills``) is the caller's."""
    target = target or target_for()
    t = tile_for(c, k, splits)
    mp, np_, kp = padded_extents(t, m, n, k, splits, pad_k) if pad else (m, n, k)
    if mp * np_ * kp > MAX_EDGE_WASTE * m * n * k:
        return None
    if not _fits(t, mp, np_, kp, splits, whole=t is not c.tile):
        return None
    seconds = estimate_seconds(c, mp, np_, kp, batch, splits, target, (m, n, k))
    edge = EDGE_COST if (mp, np_) != (m, n) else K_EDGE_COST if kp != k else 1.0
    return seconds * edge, t


def matmul_tile(
    m: int, n: int, k: int, batch: int = 1, mixed: bool = False, target: Target | None = None
) -> MatmulTile | None:
    """The tile ``matmul_plan`` picks for a product that is not split."""
    plan = matmul_plan(m, n, k, batch, mixed, split=False, target=target)
    return plan[0] if plan is not None else None


@dataclass(frozen=True)
class MatmulProblem:
    """What the planner needs of a contraction kernel: its output rows and columns (the
    last two axes), K, the product of the other axes, whether its operands are stored both
    ways, and whether its K can be split (one reduce loop reading only inputs)."""

    m: int
    n: int
    k: int
    batch: int
    mixed: bool
    splittable: bool
    pads_k: bool = False  # K may be padded (``edge_tiles.pads_k_exactly``)


def matmul_problem(kernel: tile.KernelOp, by_model: bool = True) -> MatmulProblem | None:
    """The contraction ``kernel`` is, or None: a kernel straight from ``tileify`` (every
    axis free), at least two axes, top-level reduce loops (no online group) that write no
    memory and load an element not every axis indexes (``analysis.is_contraction``).
    ``by_model``: also that both output axes' copies share a load (else a register tile
    reuses nothing), which the planner needs and a tile given by options does not."""
    axes = kernel.axes
    if len(axes) < 2 or any(b != "free" for _, _, b in axes):
        return None
    reduces = top_level_reduces(kernel)
    if not reduces or not is_contraction(kernel, reduces):
        return None
    if any(len(combine.groups(r.kinds)) < len(r.kinds) for r in reduces):
        return None  # an online group (attention's walk): its accumulators are per output
    if any(o.has_trait(MemoryWriteEffect) for r in reduces for o in r.walk()):
        return None
    (m, m_extent, _), (n, n_extent, _) = axes[-2], axes[-1]
    if by_model and not (shares_loads_across(reduces, m) and shares_loads_across(reduces, n)):
        return None
    batch = 1
    for _, extent, _ in axes[:-2]:
        batch *= extent
    splittable = len(reduces) == 1 and reads_only_inputs(kernel, reduces[0])
    k = max(r.extent for r in reduces)
    pads_k = len(reduces) == 1 and pads_k_exactly(reduces[0])
    return MatmulProblem(
        m_extent, n_extent, k, batch, stored_both_ways(reduces), splittable, pads_k
    )


def stores_for(p: MatmulProblem, choice: MatmulTile, splits: int, target: Target) -> int:
    """Outputs a thread stores at once from a row of its register tile (the schedule's
    ``stores``): 4 (float4, ``emit.packed_stores``) where the product writes its output
    once (no K split), the output is at least what it reads, and moving those bytes at
    the target's copy rate takes longer than its arithmetic at its fp32 rate: the output
    is what the kernel waits on (K = 16 over an 8192 x 8192 output, 120 -> 88 us on an
    H100). Else 1: where the arithmetic bounds the kernel the float4 stores only cost
    (on the same H100 a 3072 cube 4% slower, a Qwen2.5-7B layer's split down projection
    19%, TinyLlama's layer at S=512 5%). Bytes are counted at 4 an element: the emitter
    packs only 4-byte elements, so the answer matters only for those."""
    if splits != 1 or choice.tn % 4:
        return 1
    written = p.m * p.n * p.batch * 4
    read = (p.m + p.n) * p.k * p.batch * 4
    memory = (written + read) / target.bandwidth
    arithmetic = 2 * p.m * p.n * p.k * p.batch / target.fp32_flops
    return 4 if written >= read and memory > arithmetic else 1


def schedule_for(
    choice: MatmulTile, splits: int = 1, planned: bool = False, stores: int = 1
) -> tile.ScheduleAttr:
    """The ``#tile.schedule`` of a kernel of tile ``choice`` (its residency and unroll as
    the candidate was measured; ``stores``: ``stores_for``)."""
    return tile.ScheduleAttr.make(
        choice.tm,
        choice.tn,
        threads_m=choice.threads_m,
        threads_n=choice.threads_n,
        k_chunk=choice.bk,
        splits=splits,
        resident=min_blocks_per_sm(choice),
        unroll=chunk_unroll(choice) or 0,
        planned=int(planned),
        stores=stores,
    )


def plan_matmul(
    kernel: tile.KernelOp, target: Target | None = None, split: bool = True, splits: int = 0
) -> tile.ScheduleAttr | None:
    """The planning function of a matmul kernel: its ``#tile.schedule`` on ``target``
    (None: sm_90), or None when ``kernel`` is no contraction the model has a tile for (the
    default schedule then). ``split``: K splits allowed (``split-matmul-k``); ``splits``
    forces their count (when the chosen chunk divides the split K)."""
    problem = matmul_problem(kernel) if tile.schedule_of(kernel) is None else None
    if problem is None:
        return None
    split = split and problem.splittable
    p = problem
    plan = matmul_plan(p.m, p.n, p.k, p.batch, p.mixed, split, target, pad_k=p.pads_k)
    if plan is None:
        return None
    choice, chosen = plan
    if split and splits:
        if p.k % (splits * choice.bk) and not p.pads_k:
            return None
        chosen = splits
    stores = stores_for(p, choice, chosen, target or target_for())
    return schedule_for(choice, chosen, planned=chosen > 1, stores=stores)


def pad_to_schedule(
    kernel: tile.KernelOp,
    schedule: tile.ScheduleAttr,
    split: bool,
    target: Target | None = None,
    pad_k: bool = True,
) -> bool:
    """Round ``kernel`` up to ``schedule``'s block tile and K chunks (times its splits,
    when ``split``: the kernel before ``split-matmul-k`` cuts its K) where they do not
    divide it, in place (``edge_tiles.pad_contraction``), and copy its unaligned operands
    aligned where that is cheap (``edge_tiles.align_operands``). ``pad_k=False``: K is
    left as it is (a tile from options on a K that cannot be padded exactly)."""
    k_step = max(schedule.k_chunk.data, 1) * (schedule.splits.data if split else 1)
    k_step = k_step if pad_k else 1
    if not pad_contraction(kernel, *schedule.block_tile, k_step):
        return False
    target = target or target_for()
    align_operands(kernel, target.fp32_flops / target.bandwidth)
    return True
