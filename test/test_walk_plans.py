"""The attention walk's planning functions (``schedule.reduce``, ``schedule.launch``):
what each decides from the shape and the target, at the edges of its rules."""

from __future__ import annotations

import pytest

from deplodock.passes.tile.schedule.launch import rows_per_block
from deplodock.passes.tile.schedule.reduce import (
    CAUSAL_WALK_BLOCK_THREADS,
    walk_batch,
    walk_block_threads,
    walk_chunk,
    walk_chunks,
    walk_column_lanes,
    walk_rows,
)
from deplodock.target import target_for

H200 = target_for("sm_90")


@pytest.mark.parametrize(
    ("trips", "batch"), [(1, 1), (2, 2), (7, 7), (9, 3), (11, 1), (16, 8), (32, 8), (12, 6)]
)
def test_walk_batch_is_the_largest_divisor_up_to_eight(trips: int, batch: int) -> None:
    assert walk_batch(trips) == batch


def test_walks_keeping_many_sums_a_thread_are_not_batched() -> None:
    """A batch keeps its own sums beside the running ones: a lane's 32 columns (2 + 32
    sums) are batched, a whole row of 64 on one thread is not (it spilled)."""
    assert walk_batch(32, 2 + 32) == 8
    assert walk_batch(32, 2 + 64) == 1


def test_walk_lanes_hold_a_row_in_few_registers_when_rows_are_many() -> None:
    """Few rows (decode) split their keys; up to 8192 rows take the most lanes; more rows
    the fewest lanes that keep a row's query, sums and batch sums within LANE_WORDS."""
    assert walk_column_lanes(32, 64, 64) == 1
    assert walk_column_lanes(4096, 64, 64) == 8
    assert walk_column_lanes(16384, 64, 64) == 2
    assert walk_column_lanes(131072, 64, 64) == 2
    assert walk_column_lanes(16384, 128, 64) == 4
    assert walk_column_lanes(16384, 16, 16) == 1  # a whole row fits one lane
    assert walk_column_lanes(16384, 12, 12) == 1  # 36 words: one lane


def test_causal_walks_take_small_blocks_and_every_walk_covers_the_sms() -> None:
    many = 131072 * 2
    assert walk_block_threads(True, many, 256, H200) == CAUSAL_WALK_BLOCK_THREADS
    assert walk_block_threads(True, many, 256, H200, lanes=2) == CAUSAL_WALK_BLOCK_THREADS
    # other walks: 32 rows a block, 64 to 256 threads
    assert walk_block_threads(False, many, 256, H200, lanes=8) == 256
    assert walk_block_threads(False, many, 256, H200, lanes=4) == 128
    assert walk_block_threads(False, many, 256, H200, lanes=2) == 64
    assert walk_block_threads(False, 16384 * 8, 256, H200, lanes=8) == 256
    assert walk_block_threads(False, 16384 * 2, 256, H200, lanes=8) == 128  # 128 of 256
    # 3584 rows of 4 threads: 56 blocks of 256 would leave SMs idle; 64 give 224
    assert walk_block_threads(False, 3584 * 4, 256, H200, lanes=4) == 64
    assert walk_block_threads(False, 3584 * 8, 256, H200, lanes=8) == 128  # 112 of 256


def test_long_rows_take_a_warp_of_lanes_and_blocks_of_four_rows() -> None:
    """A head dim of 1024 (over 256 rows) is dealt to a warp's lanes, 32 a lane, and a
    block keeps 4 such rows (a staged chunk shared by 2 rows would be read from L2 twice
    as often); 2048 floats of a key and its value row take 4 keys a chunk in dynamic
    shared memory (two copies: 64 KB, a third of an H200 SM's), 4096 do not."""
    assert walk_column_lanes(2048, 1024, 1024) == 32
    assert walk_column_lanes(16384, 1024, 1024) == 32
    assert walk_column_lanes(2048, 512, 512) == 16  # 1024 jammed rows: too few to jam
    assert walk_column_lanes(16384, 512, 512) == 32  # 2 rows a thread (walk_rows): 32 each
    assert walk_column_lanes(2048, 1000, 1000) == 8  # 1000 = 8 x 125: 16 lanes do not divide
    assert walk_column_lanes(128, 1024, 1024) == 1  # decode: the keys split instead
    assert walk_block_threads(True, 2048 * 32, 256, H200, lanes=32) == 128
    # head dims of 128 and more: two rows a thread, so twice the lanes (8 at 128)
    assert walk_rows(16384, 128) == 2 and walk_rows(16384, 64) == 1 and walk_rows(32, 128) == 1
    # a jam must leave 8 thread-rows an SM (Qwen's S=32, 896 rows, lost) and a warp of
    # lanes room for both rows (head dim 1024 spilled); the SMs are the target's
    assert walk_rows(896, 128) == 1 and walk_rows(3584, 128) == 2
    assert walk_rows(32768, 1024) == 1 and walk_rows(32768, 512) == 2
    assert walk_rows(1024, 128, target_for("sm_75")) == 2  # 40 SMs: 512 rows a thread-row
    assert walk_column_lanes(16384, 128, 128) == 8
    assert walk_column_lanes(3584, 128, 128) == 8
    assert walk_chunk(2 * 1024 * 4, H200) == 4
    assert walk_chunk(2 * 512 * 4, H200) == 4  # 16 KB fit the static budget already
    assert walk_chunk(2 * 128 * 4, H200) == 16
    assert walk_chunk(2 * 2048 * 4, H200) == 1  # 128 KB for 4 keys: left whole
    small = target_for("sm_75")  # 64 KB of shared memory a block
    assert walk_chunk(2 * 1024 * 4, small) == 2


def test_few_long_rows_not_causal_are_split_by_keys() -> None:
    """``walk_chunks``: rows that would take 8 lanes each (256 to 8191) of a long walk
    that is not causal are split by keys, so each part's rows are many on few lanes;
    causal walks, short walks, many rows and decode stay whole."""
    assert walk_chunks(8000, 1000, 64, False, H200) == 8
    assert walk_chunks(8000, 1000, 64, True, H200) == 1
    assert walk_chunks(4096, 128, 64, False, H200) == 1  # short: one block of keys
    assert walk_chunks(16384, 1000, 64, False, H200) == 1  # many rows
    assert walk_chunks(32, 4096, 128, False, H200) == 1  # decode: chunks_for's
    assert walk_chunks(2048, 512, 1024, False, H200) == 2  # 32 lanes a row
    assert walk_chunks(1000, 997, 64, False, H200) == 8  # a prime walk: ragged parts


def test_ragged_rows_of_a_small_block_still_fill_a_warp() -> None:
    """Rows of 8 threads in a block of 64 (room for 8 rows) that do not divide the row
    axis: at least 4 rows, a warp, since the rows' combines shuffle whole warps (the
    Qwen2.5-7B decoder layer at S=128 once made blocks of 8 threads)."""
    assert rows_per_block(127, 8, ragged=True, row_threads=8) * 8 >= 32
    assert rows_per_block(131, 32, ragged=True, row_threads=2) * 2 >= 32
    assert rows_per_block(128, 8, ragged=True, row_threads=8) == 8


def test_causal_walks_are_told_from_ragged_ends() -> None:
    """``analysis.causal_walk``: a causal mask compares the walked key with the query's
    index (a kernel axis); a walk without one, or masked only against a constant, is not
    causal."""
    from deplodock.dialects import tile
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes.tile.analysis import causal_walk
    from deplodock.pipeline import lower

    sdpa = "torch.nn.functional.scaled_dot_product_attention"
    qkv = "torch.randn(1,2,40,16), torch.randn(1,2,40,16), torch.randn(1,2,40,16)"
    for extra, causal in ((", is_causal=True", True), ("", False)):
        expr = f"{sdpa}({qkv}{extra})"
        module = import_program(capture_expression(expr).program).module
        lower(module, to="tile", until="blockify-launch")
        (walk,) = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
        assert causal_walk(walk) is causal


def test_causal_walks_launch_their_longest_rows_first() -> None:
    """``blockify-launch{heavy_first}`` (the default): a causal walk's blocks of rows are
    numbered from the last rows down (``%a1 = (B - 1 - %a1_b) * R + %a1_r``), so the
    longest walks start first; other walks count up; ``heavy_first=false`` counts up.
    The interpreters' checks of causal walks (``test_softmax_sum``) run this order."""
    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes.tile.blockify_launch import BlockifyLaunch
    from deplodock.pipeline import lower

    sdpa = "torch.nn.functional.scaled_dot_product_attention"
    qkv = "torch.randn(1,2,300,16), torch.randn(1,2,300,16), torch.randn(1,2,300,16)"

    def row_index(extra: str, options=None) -> str:
        module = import_program(capture_expression(f"{sdpa}({qkv}{extra})").program).module
        lower(module, to="kernel", options=options)
        (line,) = [s for s in emit_cuda(module).splitlines() if "const int a1 = " in s]
        return line.strip()

    # 300 rows in blocks of 32: the last block's rows past the end wrap round (mod 300)
    assert "a1_b * (-32) + 288 + a1_r" in row_index(", is_causal=True")
    assert "(-" not in row_index("")
    off = {"blockify-launch": BlockifyLaunch(heavy_first=False)}
    assert "(-" not in row_index(", is_causal=True", off)
