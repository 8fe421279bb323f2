"""The reduction planner: how a row reduction is spread over threads and blocks.

Cost functions from the shape and the target: ``cooperation_threads`` (how many threads
share a row, ``cooperative-reduce``), ``chunks_for`` (how many blocks share a long row when
the rows alone cannot fill the GPU, ``chunk-reduce``) and ``column_chunks_for`` (the same
for a reduction down columns, whose threads are on its outputs).
"""

from __future__ import annotations

from deplodock.dialects.tile import WARP
from deplodock.target import Target, target_for

WAVES = 4  # rows x chunks to aim for: this many blocks per SM, a few waves
ELEMENT_BYTES = 4  # the float the row lengths below count in
MIN_CHUNKED_ROW = 32 * 1024  # shorter rows are one block's work
MIN_CHUNK = 4096  # elements a chunk keeps: two float4 loads per thread of 256, and more
MIN_COLUMN_CHUNK = 32  # rows a chunk of a column reduction keeps: partials stay <= 1/32
COLUMN_BLOCK = 256  # outputs a block of a column reduction takes (blockify-launch's block)


def chunks_for(
    rows: int, extent: int, target: Target | None = None, step_bytes: int = ELEMENT_BYTES
) -> int:
    """Cost function: chunks per row; 1 (leave it) unless the rows alone cannot fill the
    GPU (``target``'s SMs; None: sm_90) and a row is long, then the power of two dividing
    the row that brings rows x chunks to ``WAVES`` blocks an SM without a chunk falling
    below ``MIN_CHUNK`` (``_doubled``: any power of two when none divides it).

    A row's length counts in the bytes its steps read (``step_bytes`` a step: a float for
    a sum, a key's value row and score for decode attention's walk, 260 bytes at head dim
    128), so ``MIN_CHUNKED_ROW`` and ``MIN_CHUNK`` are floats' worth of bytes: a walk of
    4096 keys is 1 MB a row, long, where a sum of 4096 floats is one block's work."""
    target = target or target_for()
    steps = max(1, step_bytes // ELEMENT_BYTES)  # a step, in floats' worth of bytes
    if rows >= target.sm_count or extent * steps < MIN_CHUNKED_ROW:
        return 1
    return _doubled(
        extent,
        lambda chunks: (
            rows * (chunks // 2) < WAVES * target.sm_count
            and (extent // chunks) * steps >= MIN_CHUNK
        ),
    )


def _doubled(extent: int, wanted) -> int:
    """The power of two ``chunks`` doubles to while ``wanted(2 * chunks)``, whether or not
    it divides ``extent`` (ragged chunks, the last one shorter: ``chunk-reduce`` masks its
    steps past the end), so a prime row is split as a power of two's would be."""
    chunks = 1
    while wanted(2 * chunks):
        chunks *= 2
    return chunks


DEFAULT_THREADS = 256  # long rows: 8 warps, enough loads in flight
CONTRACTION_ROW_SHARE = 16  # a short contraction row's elements a lane: four float4 loads
LONG_ROW = 256  # a contraction this long is worth a block of threads per output
ELEMENTS_PER_THREAD = 8  # a thread's share of a row: two float4 loads
MIN_COOPERATIVE_ROW = 32  # below one warp's worth of work cooperation is all overhead


def pow2_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


WEIGHED_ACCUMULATORS = 8  # a walk keeping this many values or more is attention's
WEIGHED_THREADS_PER_SM = 128  # threads a weighted walk's rows aim to fill an SM with
WEIGHED_ALONE_ROWS_PER_SM = 512  # with this many rows an SM, a row walks on one thread


def weighted_walk_threads(rows: int, target: Target | None = None) -> int:
    """Cost function: threads per row of a walk that keeps many accumulators (attention's
    online group with its value columns, ``ten.softmax_sum``): the fewest, two or more,
    that put ``WEIGHED_THREADS_PER_SM`` threads on every SM of ``target``. Each thread
    keeps every accumulator (a combine moves them all) and reads whole rows of keys and
    values, so the threads of a row read as many rows at once: a warp's load touches a
    line per thread of a row. H200 (``docs/bench/h200-2026-12-03-s14``), causal GQA
    attention, head dim 64: 16384 rows (S=512) 508 / 311 / 557 / 1087 / 4328 us with
    1 / 2 / 4 / 8 / 32 threads a row (256: 5096); 4096 rows (S=128) 122 / 90 / 78 us with
    1 / 2 / 4. With the keys staged a chunk at a time for a block of rows (``chunk-walk``,
    session 15) one thread a row pays from ``WEIGHED_ALONE_ROWS_PER_SM`` rows an SM on:
    131072 rows (S=4096) 3824 us with 1 thread, 5168 with 2; 16384 rows 204 / 152."""
    target = target or target_for()
    if rows >= WEIGHED_ALONE_ROWS_PER_SM * target.sm_count:
        return 1
    return min(
        DEFAULT_THREADS,
        max(2, pow2_floor(WEIGHED_THREADS_PER_SM * target.sm_count // max(rows, 1))),
    )


COLUMN_LANES = 8  # lanes a query row's head dim is dealt out to, at most (split-walk-columns)
MIN_LANE_DIMS = 8  # elements of the head dim a lane keeps, at least
MIN_LANE_ROWS = 256  # fewer query rows (decode) split their keys across threads instead
MAX_LANE_ROWS = 8192  # more rows take the fewest lanes that hold a row in LANE_WORDS
LANE_WORDS = 96  # registers a lane of many rows keeps for its row: query, sums, batch sums
MAX_LANE_SHARE = 32  # a lane's share of a long head dim, at most, when a warp's lanes divide it


JAM_ROWS = 2  # query rows a thread of a wide walk keeps (jam-walk-rows)
MIN_JAM_COLUMNS = 128  # value columns (head dim) from which it does
MIN_JAM_ROWS_PER_SM = 8  # thread-rows an SM after the jam, at least (fewer: not jammed)


def walk_rows(rows: int, columns: int, target: Target | None = None) -> int:
    """Cost function: query rows a thread of an attention walk keeps (``jam-walk-rows``),
    each staged key and value element it reads serving all of them: ``JAM_ROWS`` for a
    head dim (``columns``) of ``MIN_JAM_COLUMNS`` or more whose ``JAM_ROWS`` rows a warp's
    lanes still hold at ``MAX_LANE_SHARE`` elements a lane (so not 1024), over rows enough
    that the jammed walk keeps ``MIN_JAM_ROWS_PER_SM`` thread-rows on each SM; else 1. Its
    lanes double so a thread keeps ``MAX_LANE_SHARE`` elements of its rows' head dims in
    all (``walk_column_lanes``), and its block packs as many more rows
    (``blockify-launch``: 64 threads after the jam).
    H200 (``docs/bench/h200-2026-12-04-s21``, calls 9-10), two rows a thread against one:
    head dim 128, Qwen's S=512 211 -> 170 us, S=128 24.8 -> 22.9, S=2048 1424 -> 1066; but
    Qwen's S=32 (448 thread-rows, 3 an SM) 4.7 -> 7.3, head dim 1024 spilled past 255
    registers, and head dim 64, TinyLlama's S=512 103 -> 112-135 and S=4096 3468 ->
    3432-4259, so narrower heads keep a row a thread (their walk is held back by its
    longest blocks more than by shared memory: ncu, call 6)."""
    target = target or target_for()
    wide = MIN_JAM_COLUMNS <= columns and columns * JAM_ROWS <= MAX_LANE_SHARE * WARP
    many = rows >= MIN_LANE_ROWS and rows // JAM_ROWS >= MIN_JAM_ROWS_PER_SM * target.sm_count
    return JAM_ROWS if wide and many else 1


def walk_column_lanes(rows: int, dims: int, columns: int, target: Target | None = None) -> int:
    """Cost function: lanes a row of an attention walk deals its head dim out to
    (``split-walk-columns``): the most, up to ``COLUMN_LANES``, that divide the query dim
    ``dims`` and the value ``columns`` leaving ``MIN_LANE_DIMS`` elements each, for
    ``MIN_LANE_ROWS`` to ``MAX_LANE_ROWS`` rows; 1 otherwise. Each lane keeps its share
    of the query row and of the accumulators (70 registers at 4 lanes of 64 where a
    whole row took 220), so few rows still fill the SMs; but every lane repeats the
    online step and the lanes add their partial dot products by shuffles at every key,
    so with rows enough the keys are better split across threads
    (``weighted_walk_threads``). A decode step's few long rows are split by keys and
    across blocks. H200, causal GQA, head dim 64 (``docs/bench/h200-2026-12-03-s15``,
    lanes 1 / 2 / 4 / 8): 4096 rows 75 / 49 / 45 / 33 us; 8000 rows (S=1000, not
    causal) 310 / 328 / 322 / 310; 16384 rows 154 / 161 / 287 / 256; 131072 rows
    5177 / 5438 / 10074 / 10184.

    From ``MAX_LANE_ROWS`` rows on, the fewest lanes whose share of the query, of the
    sums and of a batch's sums (``batch-walk-steps``: ``dims + 2 * columns`` words)
    fits ``LANE_WORDS``: the registers of a whole row (about 250 at head dim 64, batched)
    leave an SM 8 warps. Session 18 (``docs/bench/h200-2026-12-03-s18``, batched, the
    lanes' elements interleaved): 16384 rows 2 lanes 100-109 us against 152 split by keys,
    131072 rows 3548 against 3636."""
    if rows < MIN_LANE_ROWS:
        return 1
    if rows >= MAX_LANE_ROWS:
        lanes = 1
        while (dims + 2 * columns) > LANE_WORDS * lanes and lanes < COLUMN_LANES:
            lanes *= 2
        fits = dims % lanes == 0 and columns % lanes == 0 and dims // lanes >= MIN_LANE_DIMS
        if not fits:
            return 1
    else:
        lanes = COLUMN_LANES
        while lanes > 1 and (dims % lanes or columns % lanes or dims // lanes < MIN_LANE_DIMS):
            lanes //= 2
    # A long head dim (1024) would leave each of COLUMN_LANES lanes 128 elements of the
    # query and as many accumulators: more lanes, up to a warp, while they divide it.
    # A thread keeping several rows (``walk_rows``) keeps each one's share: more lanes.
    jam = walk_rows(rows, columns, target)
    while (
        max(dims, columns) * jam > MAX_LANE_SHARE * lanes
        and lanes < WARP
        and dims % (2 * lanes) == 0
        and columns % (2 * lanes) == 0
    ):
        lanes *= 2
    return lanes


WALK_THREADS_PER_SM = 512  # threads a walk of few rows is split to keep on every SM
MIN_SPLIT_WALK = 512  # keys a walk must have to be split
MIN_SPLIT_KEYS = 64  # keys each part of a split walk keeps, at least


def walk_chunks(
    rows: int, keys: int, columns: int, causal: bool, target: Target | None = None
) -> int:
    """Cost function: parts an attention walk's keys are split into across blocks
    (``chunk-reduce``: each part a walk of its own over ``keys / parts`` keys, a merge of
    the parts' online partials after, as flash-decoding splits a decode step), for a walk
    that is not ``causal``, of ``MIN_LANE_ROWS`` to ``MAX_LANE_ROWS`` rows (fewer are a
    decode step's, ``chunks_for``; more fill the GPU) and ``MIN_SPLIT_WALK`` keys or more:
    the power of two that brings its rows, on the lanes a row takes among many
    (``walk_column_lanes``, the head dim taken as the ``columns``), to ``WALK_THREADS_PER_SM``
    threads on every SM of ``target`` without a part falling below ``MIN_SPLIT_KEYS``.
    Whole, such rows take 8 lanes each (``walk_column_lanes``), each lane repeating every
    key's online step; split, they are many rows on those few lanes: H200,
    S=1000 not causal, head dim 64 (8000 rows; ``docs/bench/h200-2026-12-04-s21``):
    201 us whole on 8 lanes, 156 on 2, split in 2 / 4 / 8 (2 lanes, blocks of 64) 158 /
    143 / 146. A causal walk stays whole: its blocks already walk different numbers of
    keys, and split, most rows' early parts are masked whole (TinyLlama's S=512 attention
    100 -> 138 us in two, Qwen2.5-7B's 208 -> 321)."""
    target = target or target_for()
    if causal or not MIN_LANE_ROWS <= rows < MAX_LANE_ROWS or keys < MIN_SPLIT_WALK:
        return 1
    lanes = walk_column_lanes(MAX_LANE_ROWS, columns, columns)  # a row's among many
    return _doubled(
        keys,
        lambda parts: (
            rows * (parts // 2) * lanes < WALK_THREADS_PER_SM * target.sm_count
            and keys // parts >= MIN_SPLIT_KEYS
        ),
    )


CAUSAL_WALK_BLOCK_THREADS = 64  # a causal attention walk's blocks: many, to even out


MIN_WALK_BLOCK_ROWS = 4  # rows a block of a walk shares each staged chunk among, at least
WALK_BLOCK_ROWS = 32  # rows a block of a walk that is not causal takes, lanes allowing


def walk_block_threads(
    causal: bool, threads: int, default: int, target: Target | None = None, lanes: int = 1
) -> int:
    """Cost function: threads a block of an attention walk's rows (``blockify-launch``),
    the walk taking ``threads`` in all. A causal walk's blocks attend to different
    numbers of keys (the last block of a head about all of them, the first one chunk:
    ``skip-masked-chunks``), so small blocks, many to an SM, keep every SM busy to the
    end: ``CAUSAL_WALK_BLOCK_THREADS``; other walks take ``WALK_BLOCK_ROWS`` rows, from 64
    threads up to ``default``, whose larger blocks share each staged chunk among more
    rows (8 lanes a row: 256 threads; 2 lanes: 64, where 256 waited longer at each
    chunk's barrier: H200, S=1000 not causal with its keys split in 8, 146 us against
    181, ``docs/bench/h200-2026-12-04-s21``); either halves (to 64) while the blocks would
    not cover the SMs. Either way a block keeps ``MIN_WALK_BLOCK_ROWS`` rows of ``lanes``
    threads each (a head dim of 1024 over 32 lanes: 128 threads, where 64 would stage each
    chunk of keys for two rows). Session 18 (H200, fp32; ``docs/bench/h200-2026-12-03-s18``, gpu4),
    64 / 128 / 256 threads: causal TinyLlama S=512 99 / 109 / 109 us, S=128 14.6 / 16.1
    / 15.7, Qwen S=512 268 / 267 / 281, head dim 64 S=4096 3550 / 3542 / 3750, head dim
    128 S=2048 1898 / 1899 / 1985; Qwen S=128 (a walk over stored scores, 56 blocks of
    256) 28.7 / 29.3 / 40.7; not causal, S=1000: 246 / 201 / 202."""
    target = target or target_for()
    least = min(default, max(CAUSAL_WALK_BLOCK_THREADS, MIN_WALK_BLOCK_ROWS * lanes))
    rows = min(default, max(CAUSAL_WALK_BLOCK_THREADS, WALK_BLOCK_ROWS * lanes))
    block = max(least, CAUSAL_WALK_BLOCK_THREADS if causal else rows)
    while block > least and -(-threads // block) < target.sm_count:
        block //= 2
    return block


WALK_BATCH = 8  # keys an attention walk merges at once, at most (batch-walk-steps)
MAX_BATCHED_SUMS = 2 + 32  # a walk keeping more sums a thread is left one key a step


def walk_batch(trips: int, sums: int = 0) -> int:
    """Cost function: keys a batch of an attention walk's innermost loop whose threads
    each run ``trips`` steps and keep ``sums`` accumulators (``batch-walk-steps``): the
    largest divisor of ``trips`` up to ``WALK_BATCH``; 1 (leave it) when the walk keeps
    more than ``MAX_BATCHED_SUMS``, since a batch keeps its own sums beside the running
    ones (a whole row of 64 value columns on one thread, batched, spilled in Qwen's
    decoder layer: 255 registers; decode's 64 a thread ran 2% slower batched). A batch
    holds its scores in registers, one each; the hand-written probe of session 18
    (``docs/bench/h200-2026-12-03-s18/flash_probe.py``, H200, causal GQA, one row a
    thread, head dim over 2 lanes) ran 8 keys a rescale in 90 us at TinyLlama's S=512, 4
    in 120 us (4 rows a thread) and 1 in 201 us."""
    if sums > MAX_BATCHED_SUMS:
        return 1
    for batch in range(min(WALK_BATCH, trips), 1, -1):
        if trips % batch == 0:
            return batch
    return 1


WALK_CHUNK = 64  # keys a block stages at once, at most
WALK_CHUNK_BYTES = 16 * 1024  # a chunk's slabs: two copies (fill-k-loop) stay static
MIN_WALK_CHUNK = 4  # keys a chunk of long rows keeps in dynamic shared memory, at least
WALK_BLOCKS_PER_SM = 3  # ... while its two copies leave room for this many blocks an SM


def walk_chunk(key_bytes: int, target: Target | None = None) -> int:
    """Cost function: keys per chunk of an attention walk whose block shares its key and
    value rows (``chunk-walk``): the largest power of two up to ``WALK_CHUNK`` whose slabs
    (``key_bytes`` a key) fit ``WALK_CHUNK_BYTES``; 1 (leave the walk) if not even two.
    Double-buffered, the slabs then fit a block's 48 KB of static shared memory. H200,
    causal GQA attention, head dim 64 (``docs/bench/h200-2026-12-03-s15``): 32 keys a
    chunk against 64, S=512 167 / 163 us, S=128 78 / 78; head dim 128, S=512 285 / 304,
    S=2048 1992 / 2214.

    Rows so long that fewer than ``MIN_WALK_CHUNK`` keys fit (head dim 1024: 8 KB a key)
    take that many in dynamic shared memory when the two copies leave ``target``'s SMs
    room for ``WALK_BLOCKS_PER_SM`` blocks: a batch of 4 keys a step instead of 2 (H200,
    head dim 1024, S=512 causal: 272 us against 302, ``docs/bench/h200-2026-12-04-s21``)."""
    target = target or target_for()
    chunk = WALK_CHUNK
    while chunk > 1 and chunk * key_bytes > WALK_CHUNK_BYTES:
        chunk //= 2
    fits = 2 * MIN_WALK_CHUNK * key_bytes <= target.shared_bytes // WALK_BLOCKS_PER_SM
    return MIN_WALK_CHUNK if chunk < MIN_WALK_CHUNK and fits else chunk


def cooperation_threads(
    reduce_extent: int,
    parallel: int,
    contraction: bool = False,
    reductions: int = 1,
    target: Target | None = None,
    columns: bool = False,
    reads: int = 1,
    accumulators: int = 1,
    partials: bool = False,
) -> int:
    """Cost function: threads per row when cooperation pays, else 0.

    A reduction down *columns* (``columns``: ``analysis.walks_columns``, ``x.sum(1)`` of
    ``x[b, r, c]``, and a matrix-vector product ``x @ W``, a contraction) gets none: its
    threads go on the outputs, consecutive threads on consecutive addresses, each walking
    its column (a group of threads on one output would read addresses a row apart);
    ``column_chunks_for`` splits long columns across blocks when the outputs alone are
    too few blocks.

    A row reduction (softmax, a norm) of at least a warp's worth of elements
    (``MIN_COOPERATIVE_ROW``) gets a group of threads whatever the number of rows: one
    thread per row would serialise its adds, read memory uncoalesced (a warp's lanes 32 rows
    apart) and, with a few thousand rows, fill only a few SMs. The group leaves each thread
    about ``ELEMENTS_PER_THREAD`` elements (two 16-byte loads once vectorised) per chained
    reduction, up to two (softmax's max then sum: 16), as a power of two between one warp (a
    shuffle-only combine, no barrier) and ``DEFAULT_THREADS``: norm rows of 2048 or more
    get 256 threads, softmax rows of 2048 get 128, of 512 or 128 a warp. Every combine is
    a barrier the whole group waits at, so a chain of them favours smaller groups: on the
    H200, softmax (1,28,2048,2048) took 291 us with 256 threads a row and 228 us with 128
    (97% of the copy bandwidth), while RMSNorm rows did best with 256.

    A row read more than once (``reads``, the loops over it, or ``reductions`` of two or
    more: softmax's online max and sum, then its normalising loop) should still be in L2
    when it is read again: when the rows
    in flight (an SM's ``THREADS_PER_SM`` threads in blocks of the group) would not fit
    the target's L2, the group doubles up to a whole block, so fewer, longer-lived rows
    are in flight. (H200: softmax over rows of 50257 ran at 27% of the copy rate with 256
    threads a row, 1056 rows of 200 KB in flight against a 60 MB L2.)

    A walk that keeps ``accumulators`` of ``WEIGHED_ACCUMULATORS`` or more (attention) gets
    ``weighted_walk_threads``; so does the merge of a few such walks' stored partials
    (``partials``: every value it reduces is loaded, ``chunk-reduce``'s combine) on fewer
    rows than SMs, a lane a partial.

    A *contraction* (a matmul: its reduce reads an input shared by other outputs) left to
    this default schedule (the register tiles are the matmul passes' business) gets a
    block a row when the row is long (``LONG_ROW``) or the outputs are too few to give
    every SM of ``target`` (None: sm_90) a block, and a few lanes a row otherwise
    (``CONTRACTION_ROW_SHARE`` elements each): one thread an output would read its own
    row with a warp's lanes a row apart.
    """
    target = target or target_for()
    # A weighted walk's combine of a few partials (``chunk-reduce``'s flash-decoding: 8-16
    # chunks of a decode row) on fewer rows than SMs: one thread a row would merge every
    # partial's accumulators in turn, the rows in one block; a lane a partial loads them
    # at once and merges them by shuffles.
    few_partials = partials and parallel < target.sm_count and reduce_extent >= 2
    if (
        accumulators >= WEIGHED_ACCUMULATORS
        and not columns
        and (reduce_extent >= MIN_COOPERATIVE_ROW or few_partials)
    ):
        chosen = min(pow2_floor(reduce_extent), weighted_walk_threads(parallel, target))
        # Fewer rows than a block: whole warps (a block of fewer threads than a warp
        # cannot combine by shuffles), a warp a row. blockify-launch packs a walk's rows
        # into blocks whether or not they divide the rows (rows_per_block's ragged rule).
        small = parallel * chosen < DEFAULT_THREADS
        return WARP if chosen < WARP and small else chosen
    if reduce_extent < MIN_COOPERATIVE_ROW or columns:
        return 0
    if contraction:
        if reduce_extent >= LONG_ROW:
            return DEFAULT_THREADS
        if parallel < target.sm_count:
            return min(DEFAULT_THREADS, pow2_floor(reduce_extent))
        # Many outputs of short rows, read along the rows (not ``columns``): one thread an
        # output would walk its own row, a warp's lanes a row apart (uncoalesced, each
        # sector used 4 bytes at a time). A group of lanes deals the row out instead,
        # ``CONTRACTION_ROW_SHARE`` elements a lane (four float4 loads in flight), so a
        # warp reads a few whole rows per load (decode attention's scores, q . k over rows
        # of 128: 8 lanes; ``docs/bench/h200-2026-12-04-s20``).
        return min(WARP, pow2_floor(max(4, reduce_extent // CONTRACTION_ROW_SHARE)))
    share = pow2_floor(max(1, reduce_extent // (ELEMENTS_PER_THREAD * min(reductions, 2))))
    chosen = _even_shares(reduce_extent, max(WARP, min(DEFAULT_THREADS, share)))
    if max(reductions, reads) >= 2:  # each row is read again: keep the rows in flight in L2
        while (
            2 * chosen <= target.threads_per_block
            and parallel > _rows_in_flight(chosen, target)
            and _rows_in_flight(chosen, target) * ROW_ELEMENT_BYTES * reduce_extent
            > target.l2_bytes
        ):
            chosen *= 2
    return chosen


THREADS_PER_SM = 2048  # resident threads an SM holds (sm_75: 1024; the rule is a bound)
ROW_ELEMENT_BYTES = 4  # fp32 rows: what the L2 bound below assumes of a row's size


def _rows_in_flight(threads: int, target: Target) -> int:
    """Rows the GPU works on at once when each row has a block of ``threads``."""
    return target.sm_count * max(1, THREADS_PER_SM // threads)


def _even_shares(reduce_extent: int, threads: int) -> int:
    """The largest multiple of a warp, at most ``threads``, that deals a row's 16-byte
    groups out evenly (a row of 3584 floats: 896 groups, 224 threads take 4 each, where
    256 would leave half of them idle in the last round); ``threads`` if none does."""
    if threads < WARP or reduce_extent % 4:
        return threads
    for candidate in range(threads - threads % WARP, WARP - 1, -WARP):
        if (reduce_extent // 4) % candidate == 0:
            return candidate
    return threads


def column_chunks_for(outputs: int, extent: int, target: Target | None = None) -> int:
    """Cost function: chunks of a column reduction's rows, each its own threads: 1 unless
    ``outputs`` threads a chunk (``COLUMN_BLOCK`` to a block) make fewer than ``WAVES``
    blocks an SM of ``target`` (None: sm_90), then the power of two dividing the columns
    (``_doubled``: or not) that brings the blocks there without a chunk falling below
    ``MIN_COLUMN_CHUNK`` rows
    (the partial sums, ``1 / chunk`` of the input, are written and read once more)."""
    target = target or target_for()
    if outputs * extent < MIN_CHUNKED_ROW:
        return 1  # a few microseconds' work: a second launch would cost more than it saves
    return _doubled(
        extent,
        lambda chunks: (
            -(-outputs * (chunks // 2) // COLUMN_BLOCK) < WAVES * target.sm_count
            and extent // chunks >= MIN_COLUMN_CHUNK
        ),
    )


TILED_WALK_ROWS = (64, 32)  # query rows a block of ``tile-walk`` keeps, the larger first
TILED_WALK_CHUNKS = (64, 32)  # keys a chunk, the larger first
TILED_WALK_LANES = 8  # lanes a row group
TILED_WALK_UNROLL = 8
"""``#pragma unroll`` of ``tile-walk``'s score and P V loops. H100, session 40 call 1
(``docs/bench/h100-2026-12-07-s40``), against NVCC's own choice: TinyLlama S=512 72.7
against 82.6 us, Qwen S=512 138.5 / 156.8, head dim 64 S=4096 causal 2368.9 / 2656.2,
head dim 128 S=2048 774.5 / 868.6, head dim 64 S=1000 91.0 / 102.2 (4 deep: between the
two on every case)."""
TILED_WALK_BLOCKS_AN_SM = 2  # blocks each SM should hold (shared memory for two)


def tiled_walk_plan(
    rows: int, blocks_beside: int, dims: int, columns: int, target: Target | None = None
) -> tuple[int, int] | None:
    """Cost function: ``(rows a block, keys a chunk)`` for ``tile-walk``'s register-tiled
    attention walk, or None to leave the walk to the other walk passes. ``rows`` query rows
    (``blocks_beside``: the blocks of the other axes, heads and batch). The most rows of
    ``TILED_WALK_ROWS`` whose blocks still cover every SM, and the longest chunk whose
    query, double-buffered key and value chunks and shared probabilities let
    ``TILED_WALK_BLOCKS_AN_SM`` blocks share an SM; None for fewer blocks than SMs
    either way (short sequences: the lane-split walk keeps more threads busy).
    H100 (``docs/bench/h100-2026-12-07-s39``, calls 5-6), against the lane-split walk:
    TinyLlama S=512 82.4 against 100.6 us, Qwen S=512 151.5 / 167.6, head dim 64
    S=1000 not causal 102.4 (32 rows) / 133.6, S=4096 2668.5 / 3448.4, head dim 128
    S=2048 867.5 (chunks of 32) / 1067.8; S=128 (64 blocks) 15.6 / 14.0 and Qwen's
    26.6 / 21.5, so not taken there."""
    target = target or target_for()
    for block_rows in TILED_WALK_ROWS:
        if blocks_beside * -(-rows // block_rows) < target.sm_count:
            continue
        for chunk in TILED_WALK_CHUNKS:
            floats = block_rows * (dims + 4) + 4 * chunk * (max(dims, columns) + 4)
            floats += chunk * (block_rows + 4)
            if 4 * floats * TILED_WALK_BLOCKS_AN_SM <= target.shared_bytes:
                return block_rows, chunk
    return None
