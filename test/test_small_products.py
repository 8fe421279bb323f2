"""Batches of small products (issue 19's ``bmm/small``): the planner's small tiles.

``torch.bmm`` of 8192 products of 32 x 33 by 33 x 31 had no tile within the planner's
``MAX_EDGE_WASTE`` and took the default schedule (0.42x eager on the H200). The planner
now has small tiles for batches (``schedule/matmul.py``: 64 x 32, 32 x 32, 16 x 16,
``single=False``; ``provisional``: only where no measured tile fits), whose chunk is the
whole of a short K (``tile_for``: one chunk, both operands staged once), and prices a
product's traffic (``memory_seconds``). Here: the
plans it picks, its memory term, and the schedules in the SIMT interpreters (the race
checker on) against numpy at small and irregular sizes (batches of 1, 3, 67; dims of 1,
primes, one past a tile), every block run; bmm/small itself at full size on its first,
middle and last blocks.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplodock.bench.cases import shapes_cases
from deplodock.dialects import kernel, loop, tile
from deplodock.dialects.interpreters.run import run_forward, trace_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes.tile.schedule.matmul import (
    CANDIDATES,
    WHOLE_K_BYTES,
    estimate_seconds,
    matmul_plan,
    memory_seconds,
    padded_extents,
    tile_for,
)
from deplodock.pipeline import lower, make_pass
from deplodock.reference import relative_error
from deplodock.target import target_for

RTOL = 1e-5

# (batch, M, N, K): no measured tile fits these within MAX_EDGE_WASTE; the planner gives
# each its 16 x 16 tile (at these batches: more blocks for the SMs), padded where a dim is
# no multiple of 16, K staged whole where short
PLANNED = [
    (3, 32, 31, 33),  # bmm/small's products, 3 of them
    (67, 31, 29, 37),  # primes
    (4, 16, 17, 3),  # N one past a tile, K of 3
    (3, 17, 16, 16),  # M one past a tile
    (2, 13, 47, 64),
    (3, 64, 31, 129),  # K too long to stage whole: chunks of 16, K padded to 144
    (5, 16, 32, 24),  # divisible: nothing guarded
]

# (batch, M, N, K, tile options): the larger tiles and a single product, given by
# register-tile's options (a sweep's variants), padded as the planner's
GIVEN = {
    "32x32_4x4_whole_k": (3, 32, 31, 33, (4, 4, 8, 8, 33)),
    "32x32_2x2_whole_k": (3, 31, 33, 7, (2, 2, 16, 16, 7)),
    "64x32_4x4_whole_k": (1, 61, 31, 33, (4, 4, 16, 8, 33)),  # a single product
    "32x32_4x4_chunks": (3, 2, 32, 33, (4, 4, 8, 8, 8)),  # M = 2, K padded to 40
    "32x32_4x4_n3": (67, 32, 3, 13, (4, 4, 8, 8, 13)),  # N = 3
}

# (batch, M, N, K) with a dim of 1: no product of two output axes is left at the loop
# level (a batch of matrix-vector products, of outer products): other schedules'
UNIT = [(3, 1, 32, 33), (67, 32, 1, 13), (4, 16, 17, 1)]


def _bmm(b: int, m: int, n: int, k: int):
    """``torch.bmm`` of ``b`` products lowered to the loop level, with inputs and numpy's
    product."""
    expr = f"torch.bmm(torch.randn({b},{m},{k}), torch.randn({b},{k},{n}))"
    module = import_program(capture_expression(expr).program).module
    rng = np.random.default_rng(b * 1000 + m + n + k)
    x = rng.standard_normal((b, m, k)).astype(np.float32)
    w = rng.standard_normal((b, k, n)).astype(np.float32)
    want = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    return lower(module, to="loop"), [x, w], want


def _matmul_kernel(module) -> tile.KernelOp:
    (found,) = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
    return found


def _k_outer(kernel_: tile.KernelOp) -> loop.ForOp:
    (outer,) = [op for op in kernel_.body.block.ops if isinstance(op, loop.ForOp)]
    return outer


def _runs_correct(module, inputs, want) -> None:
    lower(module, to="kernel")
    (launch,) = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
    assert max(launch.block_shape) > 1  # no kernel of one thread
    (got,) = run_forward(module, inputs)  # every block, the race checker on
    assert relative_error(np.asarray(got), want) <= RTOL


@pytest.mark.parametrize("dims", PLANNED, ids=lambda d: "x".join(map(str, d)))
def test_planned_small_tiles_run_correct(dims: tuple[int, int, int, int]) -> None:
    b, m, n, k = dims
    module, inputs, want = _bmm(b, m, n, k)
    lower(module, to="tile")
    kernel_ = _matmul_kernel(module)
    schedule = tile.schedule_of(kernel_)
    assert schedule is not None and schedule.block_tile == (16, 16), schedule
    outer = _k_outer(kernel_)
    stages = [op for op in outer.body.block.ops if isinstance(op, tile.StageOp)]
    assert len(stages) == 2  # both operands from shared memory
    if k <= 64:  # one chunk of the whole K: one trip, no K padding
        assert schedule.k_chunk.data == k and outer.extent == 1
    else:
        assert schedule.k_chunk.data == 16 and outer.extent == -(-k // 16)
    padded = (m % 16, n % 16, k % schedule.k_chunk.data) != (0, 0, 0)
    assert any(getattr(o, "is_guarded", False) for o in kernel_.walk()) == padded
    _runs_correct(module, inputs, want)


@pytest.mark.parametrize("name", list(GIVEN))
def test_given_small_tiles_run_correct(name: str) -> None:
    b, m, n, k, (tm, tn, threads_m, threads_n, bk) = GIVEN[name]
    module, inputs, want = _bmm(b, m, n, k)
    options = {
        "register-tile": make_pass(
            "register-tile", tm=tm, tn=tn, threads_m=threads_m, threads_n=threads_n, bk=bk
        ),
        "chunk-matmul-k": make_pass("chunk-matmul-k", bk=bk),
    }
    lower(module, to="tile", options=options)
    kernel_ = _matmul_kernel(module)
    schedule = tile.schedule_of(kernel_)
    assert schedule.block_tile == (tm * threads_m, tn * threads_n)
    assert _k_outer(kernel_).extent == -(-k // bk)
    _runs_correct(module, inputs, want)


@pytest.mark.parametrize("dims", UNIT, ids=lambda d: "x".join(map(str, d)))
def test_unit_dims_run_correct(dims: tuple[int, int, int, int]) -> None:
    module, inputs, want = _bmm(*dims)
    _runs_correct(module, inputs, want)


def test_bmm_small_at_full_size() -> None:
    """bmm/small as the bench runs it: 8192 products in the 32 x 32 tile (4 x 4 in 8 x 8
    threads), K's 33 one chunk; its first, middle and last blocks in the interpreters."""
    case = next(c for c in shapes_cases() if c.name == "shapes/bmm/small")
    captured = case.build()
    module = import_program(captured.program).module
    lower(module, to="tile")
    schedule = tile.schedule_of(_matmul_kernel(module))
    assert (schedule.thread_tile, schedule.block_threads) == ((4, 4), (8, 8))
    assert schedule.k_chunk.data == 33
    lower(module, to="kernel")
    x, w = (a.numpy() for a in captured.example_inputs)
    trace = trace_forward(module, [x, w], blocks="sample")
    (launch,) = trace.launches
    assert launch.op.grid_shape == (8192, 1, 1) and launch.op.block_shape == (64, 1, 1)
    written = trace.written(0)
    assert np.flatnonzero(written.any((1, 2))).tolist() == [0, 4096, 8191]  # a block a product
    (got,) = trace.outputs
    want = x[[0, 4096, 8191]] @ w[[0, 4096, 8191]]
    assert relative_error(got[[0, 4096, 8191]], want) <= RTOL


def test_planner_tiles_batches_of_small_products() -> None:
    # bmm/small: 32 x 32 (4 x 4 in 8 x 8 threads), the whole K one chunk, unsplit
    tile_, splits = matmul_plan(32, 31, 33, batch=8192, mixed=True)
    assert (tile_.block_m, tile_.block_n, tile_.threads, tile_.bk, splits) == (32, 32, 64, 33, 1)
    assert matmul_plan(16, 16, 16, batch=16384, mixed=True)[0].block_m == 16
    # a K whose slabs do not fit WHOLE_K_BYTES is chunked (and padded to the chunk)
    tile_, _ = matmul_plan(31, 31, 129, batch=4096, mixed=True)
    assert tile_.block_m <= 32 and tile_.bk == 16
    # a single small product is left to the default schedule (a few blocks, launch-bound)
    assert matmul_plan(32, 31, 33) is None
    # products a measured tile fits keep it (the small tiles are provisional): 64 x 64
    # products, attention's scores at S=32 (the 32 x 64 edge tile, session 11)
    square, _ = matmul_plan(64, 64, 64, batch=4096, mixed=True)
    assert (square.block_m, square.block_n, square.bk) == (64, 64, 16)
    scores, _ = matmul_plan(32, 32, 64, batch=32)  # Q.K^T, x @ w.T
    assert (scores.block_m, scores.block_n, scores.bk) == (32, 64, 16)
    # and a matrix-vector product of a batch too (its waste past MAX_EDGE_WASTE)
    assert matmul_plan(1, 64, 64, batch=4096, mixed=True) is None


def test_whole_k_only_where_the_slabs_fit() -> None:
    small = next(c for c in CANDIDATES if c.whole_k and c.tile.block_m == 32)
    fits = WHOLE_K_BYTES // (4 * (small.tile.block_m + small.tile.block_n))
    assert tile_for(small, fits).bk == fits
    assert tile_for(small, fits + 1) is small.tile
    assert tile_for(small, fits, splits=2) is small.tile  # a split K is chunked
    big = CANDIDATES[0]
    assert not big.whole_k and tile_for(big, 16) is big.tile


def test_memory_term() -> None:
    """bmm/small's blocks (one a product) read each operand once and write the output
    once: its memory time is the bench case's traffic at the copy rate. On a T4 (a tenth
    of the bandwidth beside a sixth of the FMAs) that bounds its estimate."""
    case = next(c for c in shapes_cases() if c.name == "shapes/bmm/small")
    tile_, _ = matmul_plan(32, 31, 33, batch=8192, mixed=True)
    c = next(c for c in CANDIDATES if tile_for(c, 33) == tile_)
    h200, t4 = target_for("sm_90"), target_for("sm_75")
    mp, np_, kp = padded_extents(tile_, 32, 31, 33)
    seconds = memory_seconds(tile_, mp, np_, kp, 8192, h200, (32, 31, 33))
    assert seconds == pytest.approx(case.traffic_bytes / h200.bandwidth)
    assert estimate_seconds(c, mp, np_, kp, 8192, 1, h200, (32, 31, 33)) >= seconds
    on_t4 = memory_seconds(tile_, mp, np_, kp, 8192, t4, (32, 31, 33))
    assert estimate_seconds(c, mp, np_, kp, 8192, 1, t4, (32, 31, 33)) == on_t4
    # a padded element is not read: the traffic is the product's own
    assert memory_seconds(tile_, 64, 64, 33, 1, h200, (33, 33, 33)) == pytest.approx(
        4 * (33 * 33 * 2 + 33 * 33 * 2 + 33 * 33) / h200.bandwidth  # 2 x 2 blocks
    )
