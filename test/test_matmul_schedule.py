"""The matmul schedule (issue 6), pass by pass, in the SIMT interpreters and under NVRTC.

Each program goes through the tile pipeline as ``deplodock`` runs it: ``register-tile``
(the cost model ``matmul_tile`` picks the tile), ``chunk-matmul-k``, ``blockify-launch``'s
block tile, ``permute-register-tile``, ``stage-inputs``' K-chunk slabs and ``pad-smem``,
then ``materialize``. After every pass the interpreters give the loop level's result on
random inputs (chunking changes the order of additions, so the check is to 1e-5 of the
largest output, not to the bit); at the kernel level the race checker runs too, and a
schedule missing the barrier that guards a refilled slab is caught. Every kernel compiles
for sm_90 with no spills, and its K chunks accumulate into the outer accumulators.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np
import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from deplodock.backends.cuda.emit import emit_cuda
from deplodock.dialects import kernel, loop, make_context, tile
from deplodock.dialects.interpreters.kernel import MBarrierDeadlock, SharedMemoryRace
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.passes.tile.analysis import (
    is_contraction,
    register_tile_of,
    stored_both_ways,
    top_level_reduces,
)
from deplodock.passes.tile.schedule.matmul import (
    CANDIDATES,
    MAX_SPLITS,
    SPLIT_COUNTS,
    MatmulTile,
    chunk_unroll,
    matmul_plan,
    matmul_tile,
    min_blocks_per_sm,
)
from deplodock.pipeline import PASSES_TO, lower
from deplodock.reference import fresh_inputs, relative_error

RTOL = 1e-5
PASSES = (*PASSES_TO["tile"], *PASSES_TO["kernel"])


@dataclass(frozen=True)
class Program:
    expr: str
    tile: tuple[int, int]  # the register tile the schedule must pick
    stages: int  # slabs staged per K chunk
    options: dict = field(default_factory=dict)  # pass name -> options (else the cost model's)
    # How the K loop refills its slabs: "prefetch" (the cost model's: two buffers, the next
    # chunk loaded into registers during the compute), "mixed" (the cost model's for slabs
    # stored both ways: cp.async for one, register prefetch for the other), "single" (one
    # buffer, two barriers a chunk) or "async" (two buffers, 4-byte cp.async one chunk
    # ahead; slower, kept tested) or "async3" (three buffers two chunks ahead, one barrier
    # a chunk; fill-k-loop{buffers=3})
    # or "tma" (two buffers, TMA box copies one chunk ahead on mbarriers; fill-k-loop's tma
    # is off by default, not measured yet) or "branched" (register prefetch whose loads of
    # the next chunk each sit under their own branch; materialize{branched_loads=true}).
    schedule: str = "prefetch"


SCHEDULE_OPTIONS = {
    "prefetch": {},
    "mixed": {},
    "single": {"fill-k-loop": {"max_bytes": 0}},
    "async": {"fill-k-loop": {"always": True, "narrow": True}},
    "async3": {"fill-k-loop": {"always": True, "narrow": True, "buffers": 3}},
    "tma": {"fill-k-loop": {"tma": True}},
    "branched": {"materialize": {"branched_loads": True}},
}


TILE_64X64 = {"tm": 4, "tn": 4, "threads_m": 16, "threads_n": 16}  # 64 x 64 blocks

CORPUS = {
    # 32 x 64 block tiles (the cost model's pick for so few blocks), 4 x 4 per thread
    "linear": Program(
        "torch.nn.functional.linear(torch.randn(1,128,256), torch.randn(512,256))", (4, 4), 2
    ),
    # 128 x 128 block tiles of 8 x 8 per thread: permuted columns
    "linear_8x8": Program(
        "torch.nn.functional.linear(torch.randn(1,128,64), torch.randn(256,64))",
        (8, 8),
        2,
        {"register-tile": {"tm": 8, "tn": 8, "threads_m": 16, "threads_n": 16}},
    ),
    # 128 x 128 block tiles in 128 threads, 16 x 8 per thread (the LM head's, at 4096)
    "linear_16x8": Program(
        "torch.nn.functional.linear(torch.randn(1,128,32), torch.randn(128,32))",
        (16, 8),
        2,
        {"register-tile": {"tm": 16, "tn": 8, "threads_m": 8, "threads_n": 16}},
    ),
    # bias and relu as the epilogue
    "bias_relu": Program(
        "torch.relu(torch.nn.functional.linear(torch.randn(1,64,128), torch.randn(128,128),"
        " torch.randn(128)))",
        (4, 4),
        2,
    ),
    # the gated MLP: gate, then up with silu(gate) * up as its epilogue (two matmul kernels)
    "gated": Program(
        "torch.nn.functional.silu(torch.nn.functional.linear(torch.randn(1,64,128) * 1.0,"
        " torch.randn(256,128))) * torch.nn.functional.linear(torch.randn(1,64,128),"
        " torch.randn(256,128))",
        (4, 4),
        2,
    ),
    # a batch axis in blocks; torch.matmul's w[k, n] is staged in its own order, x[m, k]
    # transposed: the mixed rotation (w by 16-byte cp.async, x by register prefetch)
    "batched": Program(
        "torch.matmul(torch.randn(4,64,64), torch.randn(4,64,64))", (4, 4), 2, schedule="mixed"
    ),
    # a batch of small products (issue 19's bmm/small, 3 of them): the planner's 16 x 16
    # tile (2 x 2 in 8 x 8 threads), padded (N = 31), K = 33 one chunk staged whole
    "batched_small": Program(
        "torch.matmul(torch.randn(3,32,33), torch.randn(3,33,31))", (2, 2), 2, schedule="single"
    ),
    # the same in bmm/small's tile at full size (4 x 4 in 8 x 8 threads, given by options)
    "batched_small_4x4": Program(
        "torch.bmm(torch.randn(3,32,33), torch.randn(3,33,31))",
        (4, 4),
        2,
        {"register-tile": {"tm": 4, "tn": 4, "threads_m": 8, "threads_n": 8, "bk": 33}},
        schedule="single",
    ),
    # the same in the cost model's tile for such products at 4096: 128 x 128, 8 x 8 a
    # thread, a K chunk of 16 unrolled whole
    "mixed_8x8": Program(
        "torch.matmul(torch.randn(128,64), torch.randn(64,128))",
        (8, 8),
        2,
        {
            "register-tile": {"tm": 8, "tn": 8, "threads_m": 16, "threads_n": 16},
            "chunk-matmul-k": {"bk": 16},
            "mark-unroll": {"max_chunk_trips": 16},
        },
        schedule="mixed",
    ),
    "batched_single": Program(
        "torch.matmul(torch.randn(4,64,64), torch.randn(4,64,64))", (4, 4), 2, schedule="single"
    ),
    # few tiles, long K: split-matmul-k gives K to 4 blocks per tile, then adds the partials
    "split_k": Program(
        "torch.nn.functional.linear(torch.randn(1,32,512), torch.randn(256,512))", (4, 4), 2
    ),
    # the same schedules single-buffered, and pipelined by cp.async
    "linear_single": Program(
        "torch.nn.functional.linear(torch.randn(1,128,256), torch.randn(512,256))",
        (4, 4),
        2,
        schedule="single",
    ),
    "linear_8x8_single": Program(
        "torch.nn.functional.linear(torch.randn(1,128,64), torch.randn(256,64))",
        (8, 8),
        2,
        {"register-tile": {"tm": 8, "tn": 8, "threads_m": 16, "threads_n": 16}},
        schedule="single",
    ),
    "linear_async": Program(
        "torch.nn.functional.linear(torch.randn(1,128,256), torch.randn(512,256))",
        (4, 4),
        2,
        schedule="async",
    ),
    "linear_8x8_async": Program(
        "torch.nn.functional.linear(torch.randn(1,128,64), torch.randn(256,64))",
        (8, 8),
        2,
        {"register-tile": {"tm": 8, "tn": 8, "threads_m": 16, "threads_n": 16}},
        schedule="async",
    ),
    "bias_relu_async": Program(
        "torch.relu(torch.nn.functional.linear(torch.randn(1,64,128), torch.randn(128,128),"
        " torch.randn(128)))",
        (4, 4),
        2,
        schedule="async",
    ),
    # three buffers, two chunks in flight: the 4 x 4 tile (16 chunks), the 16 x 8 tile
    # (4 chunks of 8), and split K (the partial sums' kernel, 8 chunks a split)
    "linear_async3": Program(
        "torch.nn.functional.linear(torch.randn(1,128,256), torch.randn(512,256))",
        (4, 4),
        2,
        schedule="async3",
    ),
    "linear_16x8_async3": Program(
        "torch.nn.functional.linear(torch.randn(1,128,32), torch.randn(128,32))",
        (16, 8),
        2,
        {"register-tile": {"tm": 16, "tn": 8, "threads_m": 8, "threads_n": 16}},
        schedule="async3",
    ),
    "split_k_async3": Program(
        "torch.nn.functional.linear(torch.randn(1,32,512), torch.randn(256,512))",
        (4, 4),
        2,
        schedule="async3",
    ),
    # irregular sizes (M 61, N 131, K 263: primes): edge tiles, every copy guarded
    "prime_async3": Program(
        "torch.nn.functional.linear(torch.randn(1,61,263), torch.randn(131,263))",
        (4, 4),
        2,
        {"register-tile": TILE_64X64},
        schedule="async3",
    ),
    # register prefetch with each load loop under its own branch: the 4 x 4 tile, the
    # 16 x 8 tile, and prime sizes (edge tiles: the loads guarded as well)
    "linear_branched": Program(
        "torch.nn.functional.linear(torch.randn(1,128,256), torch.randn(512,256))",
        (4, 4),
        2,
        schedule="branched",
    ),
    "linear_16x8_branched": Program(
        "torch.nn.functional.linear(torch.randn(1,128,32), torch.randn(128,32))",
        (16, 8),
        2,
        {"register-tile": {"tm": 16, "tn": 8, "threads_m": 8, "threads_n": 16}},
        schedule="branched",
    ),
    "prime_branched": Program(
        "torch.nn.functional.linear(torch.randn(1,61,263), torch.randn(131,263))",
        (4, 4),
        2,
        {"register-tile": TILE_64X64},
        schedule="branched",
    ),
    # the seed's prologue x + b inside the K loop: b[k] is a slab of its own
    # both operands staged in their own order (a[k, m], b[k, n]: a.t() @ b), so the whole
    # K loop can be filled by TMA; each slab's 64-float rows land as two 128-byte boxes
    # (split-inner-for-swizzle)
    "tma": Program(
        "torch.matmul(torch.randn(128,64).t(), torch.randn(128,64))",
        (4, 4),
        2,
        {"register-tile": TILE_64X64},
        schedule="tma",
    ),
    # the same, the slabs swizzled (SWIZZLE_128B; the loads index with an xor)
    "tma_swizzle": Program(
        "torch.matmul(torch.randn(128,64).t(), torch.randn(128,64))",
        (4, 4),
        2,
        {"split-inner-for-swizzle": {"swizzle": True}, "register-tile": TILE_64X64},
        schedule="tma",
    ),
    # the same with block axes and K split over two blocks (the partial sums' kernel)
    "tma_split_k": Program(
        "torch.matmul(torch.randn(256,128).t(), torch.randn(256,128))",
        (4, 4),
        2,
        {"register-tile": TILE_64X64},
        schedule="tma",
    ),
    # attention's output read by its projection: x[h, s, d] as [s, h * d]; K chunks of 16
    # lie in one head (d = 16), so the chunk is staged like any x (its origin's head is
    # k floordiv 16)
    "heads_as_columns": Program(
        "torch.nn.functional.linear(torch.randn(1,8,32,16).transpose(1,2).reshape(1,32,128),"
        " torch.randn(64,128))",
        (4, 4),
        2,
    ),
    "seed_prologue": Program(
        "torch.relu(torch.matmul(torch.randn(64,128) + torch.randn(128), torch.randn(128,64)))",
        (4, 4),
        3,
        schedule="single",
    ),
}


@dataclass
class Stages:
    texts: dict[str, str]
    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    reference: list[np.ndarray]


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


@functools.cache
def stages(name: str) -> Stages:
    program = CORPUS[name]
    captured = capture_expression(program.expr)
    imported = import_program(captured.program)
    module = lower(imported.module, to="loop")
    seed = sum(map(ord, name))
    args, _, reference = fresh_inputs(captured, imported.func, seed, device="cpu")
    inputs = [a.numpy().copy() for a in args]
    ctx = make_context()
    texts = {"input": str(module)}
    options = {**program.options, **SCHEDULE_OPTIONS[program.schedule]}
    for pass_name in PASSES:
        get_pass(pass_name)(**options.get(pass_name, {})).apply(ctx, module)
        module.verify()
        texts[pass_name] = str(module)
    expected = run_forward(_parse(texts["input"]), inputs)
    return Stages(texts, inputs, expected, [w.numpy() for w in reference()])


def _matmul_kernels(text: str, kind: type) -> list:
    return [op for op in _parse(text).walk() if isinstance(op, kind) and tile.is_register_tiled(op)]


# --- meaning ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CORPUS))
def test_loop_level_matches_the_reference(name: str) -> None:
    got = stages(name)
    for out, want in zip(got.expected, got.reference, strict=True):
        assert relative_error(out, want) <= RTOL


def _changed(got: Stages, pass_name: str) -> bool:
    """Whether ``pass_name`` changed the program (its output differs from its input)."""
    before = (("input",) + PASSES)[PASSES.index(pass_name)]
    return got.texts[pass_name] != got.texts[before]


# Passes no matmul program here changes: they lower reductions and elementwise kernels,
# and their meaning is tested on those (test_simt_interpreters.py, test_vectorize.py,
# test_reduction_layouts.py; attention's chunk-walk, skip-masked-chunks,
# split-walk-columns, batch-walk-steps and jam-walk-rows, off by default:
# test_softmax_sum.py; tile-walk: test_tile_walk.py).
NOT_FOR_MATMULS = frozenset(
    {
        "collapse-reduce",
        "chunk-reduce",
        "cooperative-reduce",
        "vectorize",
        "chunk-walk",
        "skip-masked-chunks",
        "split-walk-columns",
        "batch-walk-steps",
        "jam-walk-rows",
        "tile-walk",
    }
)
# Matmul passes the default pipeline does not run: tensor cores (``mma-contract``) are
# asked for; its meaning is tested on the matmuls it rewrites in test_mma.py.
OFF_BY_DEFAULT = frozenset({"mma-contract"})


def test_every_other_pass_changes_some_matmul_program() -> None:
    """So that the meaning test below checks each of them on something it rewrote."""
    unchanged = {p for p in PASSES if not any(_changed(stages(n), p) for n in CORPUS)}
    assert unchanged == NOT_FOR_MATMULS | OFF_BY_DEFAULT


@pytest.mark.parametrize(("name", "pass_name"), [(n, p) for n in CORPUS for p in PASSES])
def test_pass_preserves_meaning(name: str, pass_name: str) -> None:
    """Every pass, every program it changes; at the kernel level the race checker runs as
    well. A program the pass leaves as it was proves nothing: skipped, and said so."""
    got = stages(name)
    if not _changed(got, pass_name):
        pytest.skip(f"{pass_name} leaves {name} unchanged: nothing to check")
    outputs = run_forward(_parse(got.texts[pass_name]), got.inputs)
    for i, (out, want) in enumerate(zip(outputs, got.expected, strict=True)):
        assert not np.isnan(out).any(), f"output {i}: elements left unwritten after {pass_name}"
        error = relative_error(out, want)
        assert error <= RTOL, f"output {i}: {pass_name} changed the result ({error:.2e})"


# --- the schedule ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_schedule(name: str) -> None:
    """The register tile, the block tile in threads and blocks, the K chunks, the slabs
    (of every matmul kernel: the gated MLP has two, gate and up)."""
    program, got = CORPUS[name], stages(name)
    tiled_all = _matmul_kernels(got.texts["register-tile"], tile.KernelOp)
    placed_all = _matmul_kernels(got.texts["blockify-launch"], tile.KernelOp)
    staged_all = _matmul_kernels(got.texts["pad-smem"], tile.KernelOp)
    assert tiled_all and len(tiled_all) == len(placed_all) == len(staged_all)
    for tiled, placed, staged in zip(tiled_all, placed_all, staged_all, strict=True):
        _check_schedule(program, tiled, placed, staged)
    # The fill the planner chose is the one the program is listed under, on every kernel.
    fills = {
        tile.schedule_of(k).fill.data
        for k in _matmul_kernels(got.texts["fill-k-loop"], tile.KernelOp)
    }
    fill = {"single": "sync", "branched": "prefetch"}.get(program.schedule, program.schedule)
    assert fills == {fill}


def _check_schedule(program: Program, tiled, placed, staged) -> None:
    assert register_tile_of(tiled) == program.tile
    schedule = tile.schedule_of(tiled)
    threads_m, threads_n = schedule.block_threads
    bk = schedule.k_chunk.data
    bk = program.options.get("chunk-matmul-k", {}).get("bk") or bk  # an option overrides
    threads = [e for _, e, b in placed.axes if b == "thread"]
    assert threads == [threads_m, threads_n]
    outer = [op for op in staged.body.block.ops if isinstance(op, loop.ForOp) and op.is_reduce]
    assert outer, "no K loop"
    for k_outer in outer:
        slabs = [op for op in k_outer.body.block.ops if isinstance(op, tile.StageOp)]
        assert len(slabs) == program.stages
        (inner,) = [op for op in k_outer.body.block.ops if isinstance(op, loop.ForOp)]
        assert inner.extent == bk
        # The operands the inner loop reads all come from the slabs.
        for load in inner.walk():
            if isinstance(load, loop.LoadOp):
                assert isinstance(load.buffer.owner, tile.StageOp), load
        for slab in slabs:
            # x[m, k]: the threads walk m, the K loop k: stored [k][m], rows of 32 floats
            # or more padded (a.t() of the TMA programs is a[k, m]: stored as it lies; the
            # 16 x 16 tile's rows of 16 are not).
            wide = slab.is_transposed and slab.box_shape[0] >= 32
            if slab.source.name_hint == "x_b" and program.schedule != "tma":
                assert slab.is_transposed and slab.padding == (4 if wide else 0)
            assert slab.padding == (4 if wide else 0)


def test_permuted_columns_are_float4_strips() -> None:
    """Thread t's columns: t*4 .. t*4+3, then 64 further: a warp's reads are contiguous."""
    got = stages("linear_8x8")
    before = got.texts["blockify-launch"]
    after = got.texts["permute-register-tile"]
    assert "(d0 * 8) + 5" in before
    assert "((d0 * 128) + (d1 * 4)) + 65" in after


def _named(schedule: str) -> list[str]:
    return [name for name, program in CORPUS.items() if program.schedule == schedule]


def _k_loops(name: str) -> list[kernel.ForOp]:
    kernels = _matmul_kernels(stages(name).texts["materialize"], kernel.KernelOp)
    loops = [
        op
        for kern in kernels
        for op in kern.body.block.ops
        if isinstance(op, kernel.ForOp) and op.kinds
    ]
    assert loops
    return loops


@pytest.mark.parametrize("name", _named("single"))
def test_two_barriers_per_k_chunk(name: str) -> None:
    """Single-buffered: a barrier before the refill (the last chunk's readers are done),
    one after it (every element landed), then the chunk's compute."""
    for loop_op in _k_loops(name):
        barriers = [op for op in loop_op.body.block.ops if isinstance(op, kernel.BarrierOp)]
        assert len(barriers) == 2
        assert not any(isinstance(op, kernel.CpAsyncOp) for op in loop_op.walk())


@pytest.mark.parametrize("name", _named("prefetch"))
def test_prefetch_k_loop(name: str) -> None:
    """Register prefetch: chunk 0 is filled before the loop; each iteration loads the next
    chunk into local arrays, computes, stores the arrays to the other buffer, and ends at
    its only barrier."""
    for loop_op in _k_loops(name):
        ops = list(loop_op.body.block.ops)
        fills = [op for op in ops if isinstance(op, kernel.ForOp) and not op.kinds]
        (compute,) = [op for op in ops if isinstance(op, kernel.ForOp) and op.kinds]
        loads = [f for f in fills if ops.index(f) < ops.index(compute)]
        stores = [f for f in fills if ops.index(f) > ops.index(compute)]
        assert loads and len(loads) == len(stores)
        for load_half, store_half in zip(loads, stores, strict=True):
            (kept,) = [o for o in load_half.walk() if isinstance(o, kernel.StoreOp)]
            (held,) = [o for o in store_half.walk() if isinstance(o, kernel.LoadOp)]
            assert isinstance(kept.buffer.owner, kernel.LocalOp)
            assert held.buffer is kept.buffer
        assert [type(op) for op in ops[-2:]] == [kernel.BarrierOp, kernel.YieldOp]
        assert sum(isinstance(op, kernel.BarrierOp) for op in ops) == 1
        assert not any(isinstance(op, kernel.CpAsyncOp) for op in loop_op.walk())


def test_race_checker_catches_a_prefetch_without_its_barrier() -> None:
    """Without the iteration's barrier, a fast warp reads the next chunk's buffer while a
    slow warp is still storing it."""
    got = stages("linear")
    lines = got.texts["materialize"].splitlines()
    last = max(i for i, line in enumerate(lines) if line.strip() == "kernel.barrier")
    broken = _parse("\n".join(lines[:last] + lines[last + 1 :]))
    with pytest.raises(SharedMemoryRace, match="race"):
        run_forward(broken, got.inputs, blocks=[0])


def test_race_checker_catches_a_prefetch_into_the_buffer_being_read() -> None:
    """Storing the next chunk into the buffer this iteration computes from overwrites what
    another warp may still read."""
    got = stages("linear")
    text = got.texts["materialize"]
    assert "%buf_next" in text
    # The store halves' shared stores name %buf_next: point them at %buf instead.
    assert "[%buf_next, " in text
    broken = _parse(text.replace("[%buf_next, ", "[%buf, "))
    with pytest.raises(SharedMemoryRace, match="race"):
        run_forward(broken, got.inputs, blocks=[0])


@pytest.mark.parametrize("name", _named("async"))
def test_pipelined_k_loop(name: str) -> None:
    """Chunk 0 is copied before the loop; each iteration copies the next chunk behind a
    guard, commits, waits for all but that group, and computes between two barriers."""
    (kern,) = _matmul_kernels(stages(name).texts["materialize"], kernel.KernelOp)
    top = list(kern.body.block.ops)
    k_outer = [op for op in top if isinstance(op, kernel.ForOp) and op.kinds]
    assert k_outer
    for loop_op in k_outer:
        before = top[: top.index(loop_op)]
        assert isinstance(before[-2], kernel.CpAsyncCommitOp)  # the prologue's group
        kinds = [type(op) for op in loop_op.body.block.ops]
        i = kinds.index(kernel.CpAsyncCommitOp)
        assert kinds[i : i + 3] == [kernel.CpAsyncCommitOp, kernel.CpAsyncWaitOp, kernel.BarrierOp]
        assert kinds[-2:] == [kernel.BarrierOp, kernel.YieldOp]
        assert kinds.count(kernel.BarrierOp) == 2
        (wait,) = [op for op in loop_op.body.block.ops if isinstance(op, kernel.CpAsyncWaitOp)]
        assert wait.pending.data == 1


@pytest.mark.parametrize("name", _named("async3"))
def test_three_buffer_k_loop(name: str) -> None:
    """Chunks 0 and 1 are copied before the loop, a group each, into three buffers; each
    iteration waits for all but the newest group, passes its only barrier, copies chunk
    k + 2 behind a guard and commits, then computes; each thread's 4-byte copies are of
    consecutive elements a thread apart (no vector fill: a warp copies whole sectors)."""
    (kern,) = _matmul_kernels(stages(name).texts["materialize"], kernel.KernelOp)
    top = list(kern.body.block.ops)
    shared = [op for op in top if isinstance(op, kernel.SharedOp)]
    assert shared and all(op.result.type.get_shape()[0] == 3 for op in shared)
    for loop_op in [op for op in top if isinstance(op, kernel.ForOp) and op.kinds]:
        before = top[: top.index(loop_op)]
        commits = [op for op in before if isinstance(op, kernel.CpAsyncCommitOp)]
        assert len(commits) == 2
        kinds = [type(op) for op in loop_op.body.block.ops]
        assert kinds.count(kernel.BarrierOp) == 1
        i = kinds.index(kernel.CpAsyncWaitOp)
        assert kinds[i : i + 2] == [kernel.CpAsyncWaitOp, kernel.BarrierOp]
        assert kinds.index(kernel.CpAsyncCommitOp) > i
        (wait,) = [op for op in loop_op.body.block.ops if isinstance(op, kernel.CpAsyncWaitOp)]
        assert wait.pending.data == 1
        fills = [op for op in loop_op.walk() if isinstance(op, kernel.ForOp) and not op.kinds]
        copies = [f for f in fills if any(isinstance(o, kernel.CpAsyncOp) for o in f.walk())]
        assert copies and all(f.vector is None or f.vector.data == 1 for f in copies)


@pytest.mark.parametrize("name", _named("branched"))
def test_branched_prefetch_loads(name: str) -> None:
    """With ``materialize{branched_loads=true}`` each loop of a register prefetch's load
    half sits alone under its own ``scf.if`` on there being a next chunk (ptxas then keeps
    the loads at the top of the chunk); the stores to the other buffer stay unguarded."""
    for loop_op in _k_loops(name):
        top = list(loop_op.body.block.ops)
        ifs = [op for op in top if isinstance(op, scf.IfOp)]
        assert ifs and len({op.cond for op in ifs}) == 1
        for branch in ifs:
            (fill, _) = list(branch.true_region.block.ops)
            assert isinstance(fill, kernel.ForOp) and not fill.kinds
            loads = [op for op in fill.walk() if isinstance(op, kernel.LoadOp)]
            assert loads and all(not isinstance(op.buffer.owner, Operation) for op in loads)
        loose = [
            op
            for child in top
            if isinstance(child, kernel.ForOp) and not child.kinds
            for op in child.walk()
            if isinstance(op, kernel.LoadOp) and not isinstance(op.buffer.owner, Operation)
        ]
        assert not loose  # every global load of the next chunk is under a branch


def test_race_checker_catches_three_buffer_schedule_bugs() -> None:
    """Waiting for all but two groups leaves chunk k in flight; without the barrier a
    warp reads another warp's copies (and the copy of chunk k + 2 overwrites the buffer a
    slow warp still reads chunk k - 1 from); two buffers where three are rotated put chunk
    k + 2 into the buffer being read."""
    got = stages("linear_async3")
    text = got.texts["materialize"]
    early = _broken(text, "kernel.cp_async_wait 1", "kernel.cp_async_wait 2")
    with pytest.raises(SharedMemoryRace, match="still in flight"):
        run_forward(early, got.inputs, blocks=[0])
    lines = text.splitlines()
    wait = next(i for i, line in enumerate(lines) if "kernel.cp_async_wait 1" in line)
    assert lines[wait + 1].strip() == "kernel.barrier"
    no_barrier = _parse("\n".join(lines[: wait + 1] + lines[wait + 2 :]))
    with pytest.raises(SharedMemoryRace, match="race"):
        run_forward(no_barrier, got.inputs, blocks=[0])
    assert text.count("(d0 + 2) mod 3") == 1
    wrong = _broken(text, "(d0 + 2) mod 3", "(d0 + 2) mod 2")
    with pytest.raises(SharedMemoryRace):
        run_forward(wrong, got.inputs, blocks=[0])


def test_three_buffers_only_where_they_apply() -> None:
    """``buffers=3`` leaves a loop of register prefetch (transposed slabs, not narrow)
    and a loop of two chunks at two buffers; the option takes 2 or 3."""
    from deplodock.passes.tile.fill_k_loop import FillKLoop

    for expr, options in (
        ("torch.nn.functional.linear(torch.randn(1,128,256), torch.randn(512,256))", {}),
        (
            "torch.nn.functional.linear(torch.randn(1,128,32), torch.randn(512,32))",
            {"narrow": True},
        ),
    ):
        module = lower(import_program(capture_expression(expr).program).module, to="loop")
        ctx = make_context()
        for pass_name in PASSES_TO["tile"]:
            if pass_name == "fill-k-loop":
                FillKLoop(buffers=3, **options).apply(ctx, module)
            else:
                get_pass(pass_name)().apply(ctx, module)
        buffers = {s.buffer_count for s in module.walk() if isinstance(s, tile.StageOp)}
        assert buffers == {2}, (expr, buffers)
    with pytest.raises(DiagnosticException, match="buffers=4"):
        FillKLoop(buffers=4).apply(make_context(), ModuleOp([]))


def test_a_loop_left_short_of_three_copies_is_noted_for_v() -> None:
    """``deplodock -v`` says which K loops ``fill-k-loop{buffers=3}`` left with fewer
    copies, and why (``fill_k_loop.short``); a loop that got three, or a pass not asked
    for three, has no note."""
    from deplodock.passes.tile.fill_k_loop import FillKLoop, short

    expr = "torch.nn.functional.linear(torch.randn(1,128,256), torch.randn(512,256))"
    notes = {}
    for key, options in (
        ("prefetch", {"buffers": 3}),
        ("three", {"buffers": 3, "narrow": True}),
        ("none", {"buffers": 3, "narrow": True, "max_bytes": 0}),
        ("two", {"narrow": True}),
    ):
        module = lower(import_program(capture_expression(expr).program).module, to="loop")
        ctx = make_context()
        pass_ = FillKLoop(**options)
        for pass_name in PASSES_TO["tile"]:
            (pass_ if pass_name == "fill-k-loop" else get_pass(pass_name)()).apply(ctx, module)
        notes[key] = short(module, pass_)
    (prefetch,) = notes["prefetch"]
    assert "keeps 2 copies of its slabs: its slabs are not all copied by cp.async" in prefetch
    (none,) = notes["none"]
    assert "keeps 1 copy of its slabs: three copies take" in none and "over 0" in none
    assert notes["three"] == notes["two"] == []


def _broken(text: str, old: str, new: str) -> ModuleOp:
    assert old in text
    return _parse(text.replace(old, new, 1))


def test_race_checker_catches_an_early_wait() -> None:
    """Waiting for all but two groups leaves the chunk being computed in flight."""
    got = stages("linear_async")
    text = got.texts["materialize"]
    early = _broken(text, "kernel.cp_async_wait 1", "kernel.cp_async_wait 2")
    with pytest.raises(SharedMemoryRace, match="still in flight"):
        run_forward(early, got.inputs, blocks=[0])


def test_race_checker_catches_a_missing_barrier() -> None:
    """Without the barrier after the wait, a warp reads what another warp's copy wrote;
    without the trailing one, the next copy overwrites what a slow warp still reads."""
    got = stages("linear_async")
    text = got.texts["materialize"]
    lines = text.splitlines()
    wait = next(i for i, line in enumerate(lines) if "kernel.cp_async_wait 1" in line)
    assert lines[wait + 1].strip() == "kernel.barrier"
    after_wait = _parse("\n".join(lines[: wait + 1] + lines[wait + 2 :]))
    with pytest.raises(SharedMemoryRace, match="race"):
        run_forward(after_wait, got.inputs, blocks=[0])
    loop_end = max(i for i, line in enumerate(lines) if line.strip() == "kernel.barrier")
    trailing = _parse("\n".join(lines[:loop_end] + lines[loop_end + 1 :]))
    with pytest.raises(SharedMemoryRace, match="race"):
        run_forward(trailing, got.inputs, blocks=[0])


@pytest.mark.parametrize("name", _named("mixed"))
def test_mixed_k_loop(name: str) -> None:
    """Slabs stored both ways: the source-order one by cp.async, the transposed one by
    register prefetch, in one rotation with one barrier an iteration: wait for chunk k's
    copies, barrier, copy chunk k + 1 (guarded), commit, load the other slab's chunk k + 1
    into registers, compute, store those registers to the other buffer."""
    (kern,) = _matmul_kernels(stages(name).texts["materialize"], kernel.KernelOp)
    (loop_op,) = [op for op in kern.body.block.ops if isinstance(op, kernel.ForOp) and op.kinds]
    kinds = [type(op) for op in loop_op.body.block.ops]
    i = kinds.index(kernel.CpAsyncWaitOp)
    assert kinds[i : i + 4] == [
        kernel.CpAsyncWaitOp,
        kernel.BarrierOp,
        scf.IfOp,
        kernel.CpAsyncCommitOp,
    ]
    assert kinds.count(kernel.BarrierOp) == 1
    (wait,) = [op for op in loop_op.body.block.ops if isinstance(op, kernel.CpAsyncWaitOp)]
    assert wait.pending.data == 0
    stores = [op for op in loop_op.walk() if isinstance(op, kernel.StoreOp)]
    assert any(isinstance(s.buffer.owner, kernel.SharedOp) for s in stores)  # the prefetch


def test_mixed_cuda_at_4096() -> None:
    """The cost model's kernel for ``torch.matmul`` at 4096: the source-order slab's
    cp.async copies four floats at once, the K chunk of 16 is unrolled whole and
    ``__launch_bounds__`` asks for 2 blocks an SM (128 registers a thread)."""
    expr = "torch.matmul(torch.randn(4096,4096), torch.randn(4096,4096))"
    module = lower(import_program(capture_expression(expr).program).module, to="loop")
    ctx = make_context()
    for pass_name in PASSES:
        get_pass(pass_name)().apply(ctx, module)
    source = emit_cuda(module)
    assert "cp.async.cg.shared.global [%0], [%1], 16;" in source
    assert "cp.async.ca.shared.global" not in source
    assert "__launch_bounds__(256, 2)" in source
    assert "#pragma unroll 16" in source


def test_race_checker_catches_an_early_wait_in_the_mixed_rotation() -> None:
    """Waiting for all but one group leaves chunk k's copies in flight when it is read;
    without the barrier, one warp reads what another's copies and stores wrote."""
    got = stages("batched")
    text = got.texts["materialize"]
    early = _broken(text, "kernel.cp_async_wait 0", "kernel.cp_async_wait 1")
    with pytest.raises(SharedMemoryRace, match="still in flight"):
        run_forward(early, got.inputs, blocks=[0])
    lines = text.splitlines()
    wait = next(i for i, line in enumerate(lines) if "kernel.cp_async_wait 0" in line)
    assert lines[wait + 1].strip() == "kernel.barrier"
    no_barrier = _parse("\n".join(lines[: wait + 1] + lines[wait + 2 :]))
    with pytest.raises(SharedMemoryRace, match="race"):
        run_forward(no_barrier, got.inputs, blocks=[0])


def test_verifier_refuses_a_wait_on_an_open_group() -> None:
    """Drop the loop's commit: its wait would follow copies no group holds."""
    text = stages("linear_async").texts["materialize"]
    in_loop = text.index("kernel.cp_async_commit", text.index("scf.if"))
    uncommitted = text[:in_loop] + text[in_loop + len("kernel.cp_async_commit") :]
    with pytest.raises(VerifyException, match="not committed"):
        _parse(uncommitted).verify()


@pytest.mark.parametrize("name", _named("tma"))
def test_tma_k_loop(name: str) -> None:
    """Thread 0 initialises the two barriers and issues chunk 0 before the loop; each
    iteration it issues chunk k + 1 behind a guard (expect_tx, then a box per piece of
    each slab), every thread waits for chunk k with the phase's parity, computes, and the
    only barrier of the iteration frees the buffer for its refill."""
    kernels = _matmul_kernels(stages(name).texts["materialize"], kernel.KernelOp)
    for kern in kernels:
        top = list(kern.body.block.ops)
        (k_outer,) = [op for op in top if isinstance(op, kernel.ForOp) and op.kinds]
        before = [o for o in top[: top.index(k_outer)] if not isinstance(o, arith.ConstantOp)]
        assert isinstance(before[-1], kernel.BarrierOp)  # the inits are visible
        prologue = before[-2]
        assert isinstance(prologue, scf.IfOp)
        inits = [o for o in prologue.walk() if isinstance(o, kernel.MBarrierInitOp)]
        assert len(inits) == 2
        copies = [o for o in prologue.walk() if isinstance(o, kernel.TmaLoadOp)]
        # two slabs of 64-float rows: two 128-byte boxes each
        assert len(copies) == 4 and all(c.box_shape[-1] == 32 for c in copies)
        swizzle = CORPUS[name].options.get("split-inner-for-swizzle", {}).get("swizzle")
        for shared in {c.target.owner for c in copies}:
            assert shared.alignment == (1024 if swizzle else 128)
        assert all(c.swizzle_bytes == (128 if swizzle else None) for c in copies)
        kinds = [type(op) for op in k_outer.body.block.ops]
        wait = kinds.index(kernel.MBarrierWaitOp)
        assert kinds[wait - 2] is scf.IfOp  # the guarded issue of the next chunk
        assert kinds.count(kernel.BarrierOp) == 1
        assert kinds[-2:] == [kernel.BarrierOp, kernel.YieldOp]
        (arrive,) = [o for o in k_outer.walk() if isinstance(o, kernel.MBarrierArriveExpectTxOp)]
        issued = [o for o in k_outer.walk() if isinstance(o, kernel.TmaLoadOp)]
        assert arrive.bytes.data == sum(c.box_bytes() for c in issued)
        assert not any(isinstance(op, kernel.CpAsyncOp) for op in kern.walk())


def test_race_checker_catches_tma_schedule_bugs() -> None:
    """A wrong parity (the wait returns at once), a read before the wait, no barrier
    before the refill, no expect_tx (the phase never completes): each is caught."""
    got = stages("tma")
    text = got.texts["materialize"]
    lines = text.splitlines()
    wrong_parity = _broken(text, "((d0 floordiv 2) mod 2)", "(((d0 floordiv 2) + 1) mod 2)")
    with pytest.raises(SharedMemoryRace, match="still in flight"):
        run_forward(wrong_parity, got.inputs, blocks=[0])
    no_wait = _parse("\n".join(line for line in lines if "kernel.mbarrier_wait" not in line))
    with pytest.raises(SharedMemoryRace, match="still in flight"):
        run_forward(no_wait, got.inputs, blocks=[0])
    loop_end = max(i for i, line in enumerate(lines) if line.strip() == "kernel.barrier")
    no_refill_barrier = _parse("\n".join(lines[:loop_end] + lines[loop_end + 1 :]))
    with pytest.raises(SharedMemoryRace, match="read it"):
        run_forward(no_refill_barrier, got.inputs, blocks=[0])
    arrive = max(i for i, line in enumerate(lines) if "mbarrier_arrive_expect_tx" in line)
    no_expect = _parse("\n".join(lines[:arrive] + lines[arrive + 1 :]))
    with pytest.raises(MBarrierDeadlock, match="deadlock"):
        run_forward(no_expect, got.inputs, blocks=[0])


def test_a_load_that_ignores_the_swizzle_reads_the_wrong_element() -> None:
    """The kernel interpreter lands a swizzled box permuted: the schedule is right with the
    xor, and a load that skips it reads another element."""
    got = stages("tma_swizzle")
    text = got.texts["materialize"]
    assert "swizzle 128" in text and "arith.xori" in text
    (out,) = run_forward(_parse(text), got.inputs)
    assert relative_error(out, got.expected[0]) <= RTOL
    (wrong,) = run_forward(_broken(text, "%in_c1_sw * 4", "%in_c1_chunk * 4"), got.inputs)
    assert relative_error(wrong, got.expected[0]) > 1e-2


def test_verifier_refuses_an_unaligned_tma_slab() -> None:
    text = stages("tma").texts["materialize"]
    unaligned = _broken(text, '"x1_smem" align 128', '"x1_smem"')
    with pytest.raises(VerifyException, match="TMA needs 128"):
        unaligned.verify()


def test_split_k() -> None:
    """The partial sums' kernel comes first, split axis outermost; the original adds them."""
    got = stages("split_k")
    kernels = [
        op for op in _parse(got.texts["split-matmul-k"]).walk() if isinstance(op, tile.KernelOp)
    ]
    assert [k.sym_name.data for k in kernels] == ["k_linear_chunks", "k_linear"]
    parts, combine = kernels
    assert [e for _, e, _ in parts.axes] == [4, 32, 256]
    assert tile.schedule_of(parts).is_planned and tile.schedule_of(parts).splits.data == 4
    assert tile.schedule_of(combine) is None
    (k_loop,) = [op for op in parts.body.block.ops if isinstance(op, loop.ForOp)]
    assert k_loop.extent == 128
    (adds,) = [op for op in combine.body.block.ops if isinstance(op, loop.ForOp)]
    assert adds.extent == 4


def test_a_k_padded_alone_is_priced_by_k_edge_cost(monkeypatch) -> None:
    """K = 2048 in 3 splits pads K alone (to 3 x 688): priced by ``K_EDGE_COST``, not
    ``EDGE_COST``; an M padded to the tile is priced by ``EDGE_COST``; K in 4 splits pads
    nothing and neither applies."""
    from deplodock.passes.tile.schedule import matmul as plan

    c = next(c for c in plan.CANDIDATES if c.tile == MatmulTile(8, 8, 16, 8, 16))

    def price(m, splits):
        return plan.candidate_seconds(c, m, 5632, 2048, 1, splits)[0]

    before = (price(128, 3), price(100, 1), price(128, 4))
    monkeypatch.setattr(plan, "K_EDGE_COST", 2 * plan.K_EDGE_COST)
    assert price(128, 3) == pytest.approx(2 * before[0])
    assert (price(100, 1), price(128, 4)) == before[1:]
    monkeypatch.setattr(plan, "EDGE_COST", 3 * plan.EDGE_COST)
    assert price(100, 1) == pytest.approx(3 * before[1]) and price(128, 4) == before[2]


def test_cost_model() -> None:
    tiles = [c.tile for c in CANDIDATES]
    mixed_128, mixed_128x64, _, square_128 = tiles[:4]
    wide_128 = MatmulTile(16, 8, 8, 16, 8)  # 128 x 128 in 128 threads
    # Big products take the biggest tile that still gives every SM a block; at 4096 and
    # on an LM head (one block row streaming its weight) the 128-thread one (session 32,
    # H100 host: 3130 -> 2998 us and 525 -> 384 us). Where its whole-K tiles would leave
    # the last round part empty, it splits K so the rounds are whole (session 36, H100
    # host, bench.sweep): TinyLlama's gate at S=512 in thirds (528 blocks, two an SM: 278.9
    # us against the 8 x 8 tile unsplit's 306.9 and its own unsplit 379), q at S=512 in
    # four (103.1 against 119.5 for the 128 x 64 tile in halves).
    assert matmul_tile(4096, 4096, 4096) == wide_128
    assert matmul_plan(128, 32000, 2048) == (wide_128, 1)
    assert matmul_plan(512, 5632, 2048) == (wide_128, 3)
    assert matmul_plan(512, 2048, 2048) == (wide_128, 4)
    big = matmul_tile(512, 5632, 2048)  # every SM gets a block
    assert (512 // big.block_m) * (5632 // big.block_n) >= 132
    # The choices the H200 sweep measured fastest (session 5): TinyLlama down_proj at S=32
    # in 16 splits of 32 x 64 (63 -> 34 us), at S=128 the 128-thread 128 x 64 tile with a
    # K chunk of 16 in 8 splits; Qwen's down_proj at S=128 in 16 splits of the capped
    # 64 x 128 tile (896 blocks: 4 an SM); 4096 in whole 128 x 128 tiles.
    assert matmul_plan(32, 2048, 5632) == (tiles[9], 16)
    assert matmul_plan(128, 2048, 5632) == (tiles[4], 8)
    assert matmul_plan(128, 3584, 18944) == (tiles[7], 16)
    assert matmul_plan(4096, 4096, 4096) == (wide_128, 1)
    # Splits of three times a power of two are priced too (session 34, H100 host: TinyLlama's
    # gate at S=128 in 3 splits 80.6 us, in 4 83.1): 264 blocks are two full rounds of the
    # SMs where 352 leave a third round two-thirds full.
    assert 3 in SPLIT_COUNTS and 6 in SPLIT_COUNTS and max(SPLIT_COUNTS) == MAX_SPLITS
    assert matmul_plan(128, 5632, 2048) == (tiles[1], 3)
    # ... but not where the power of two leaves only a lone block in the last round (session
    # 36, H100 host: Qwen's gate at S=32 in 4 splits 183 us, in 3 195 us).
    assert matmul_plan(32, 18944, 3584) == (tiles[9], 4)
    # Operands stored both ways (torch.matmul's), session 6: at 4096 the capped 128 x 128
    # tile with a K chunk of 16 unrolled whole (3034 -> 2968 us); attention's P.V at
    # S=512 in 128-thread 128 x 64 tiles (37.3 -> 32.3 us).
    assert matmul_plan(4096, 4096, 4096, mixed=True) == (mixed_128, 1)
    assert (min_blocks_per_sm(mixed_128), chunk_unroll(mixed_128)) == (2, 16)
    assert matmul_plan(512, 64, 512, batch=32, mixed=True) == (mixed_128x64, 1)
    assert chunk_unroll(mixed_128x64) is None and chunk_unroll(square_128) is None
    # A capped tile only where its grid fills the block the cap makes room for.
    for m, n, k in [(128, 5632, 2048), (512, 5632, 2048), (128, 3584, 18944), (32, 256, 64)]:
        plan = matmul_plan(m, n, k)
        blocks = plan[1] * (m // plan[0].block_m) * (n // plan[0].block_n)
        assert min_blocks_per_sm(plan[0]) in (1, 4)
        assert min_blocks_per_sm(plan[0]) == 1 or blocks > 3 * 132
    # Batched products (attention's) keep to the tiles measured on them.
    for mixed in (False, True):
        batched = {c.tile for c in CANDIDATES if c.batched and c.mixed in (None, mixed)}
        for m, n, k in [(512, 128, 512), (512, 512, 128), (128, 64, 128)]:
            assert matmul_plan(m, n, k, batch=28, mixed=mixed)[0] in batched
    # Shapes no tile divides are left to the default schedule.
    assert matmul_tile(16, 16, 64) is None
    assert matmul_tile(128, 128, 4) is None


@pytest.mark.parametrize(
    ("expr", "mixed"),
    [
        ("torch.matmul(torch.randn(4,64,64), torch.randn(4,64,64))", True),
        ("torch.nn.functional.linear(torch.randn(1,64,32), torch.randn(16,32))", False),
        # grouped-query attention: P.V reads v[h floordiv 2, ..], a slab no stage takes
        (
            "torch.nn.functional.scaled_dot_product_attention(torch.randn(1,4,16,8),"
            " torch.randn(1,2,16,8), torch.randn(1,2,16,8), is_causal=True, enable_gqa=True)",
            False,
        ),
    ],
)
def test_stored_both_ways(expr: str, mixed: bool) -> None:
    """Which contractions get the cost model's tiles for operands stored both ways."""
    module = lower(import_program(capture_expression(expr).program).module, to="loop")
    get_pass("tileify")().apply(make_context(), module)
    found = []
    for kern in [op for op in module.walk() if isinstance(op, tile.KernelOp)]:
        reduces = top_level_reduces(kern)
        if reduces and is_contraction(kern, reduces) and len(kern.axes) >= 2:
            found.append(stored_both_ways(reduces))
    assert found and found[-1] == mixed  # the last contraction: the product itself, or P.V


# --- CUDA ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CORPUS))
def test_cuda_compiles_for_sm90_without_spills(name: str) -> None:
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    module = _parse(stages(name).texts["materialize"])
    source = emit_cuda(module)
    # each K chunk accumulates into the outer accumulators: no second set of registers
    assert not re.search(r"float \w+_part(_\d+)? = 0\.0f", source)
    compiled = compile_cuda(source, arch="sm_90")
    for name_, resources in compiled.resources.items():
        assert resources.spill_stores == 0 and resources.spill_loads == 0, (name_, resources)
        # the prefetch's local arrays live in registers: no stack frame
        assert resources.local_bytes == 0, (name_, resources)


def test_race_checker_catches_a_missing_refill_barrier() -> None:
    """Single-buffered, without the barrier before a refill a fast warp overwrites the
    chunk a slow warp is still reading."""
    got = stages("linear_single")
    text = got.texts["materialize"]
    barrier = text.index("kernel.barrier")  # the first: before the first refill
    broken = text[:barrier] + text[barrier + len("kernel.barrier") :]
    with pytest.raises(SharedMemoryRace, match="race"):
        run_forward(_parse(broken), got.inputs, blocks=[0])


def test_a_chunk_straddling_two_heads_stays_in_global_memory() -> None:
    """Heads of 12 read as columns: a K chunk of 16 holds parts of two heads, its
    ``k floordiv 12`` is not one value over the chunk, so only w is staged (heads of 16:
    ``heads_as_columns`` above, both staged)."""
    captured = capture_expression(
        "torch.nn.functional.linear(torch.randn(1,8,32,12).transpose(1,2).reshape(1,32,96),"
        " torch.randn(64,96))"
    )
    module = lower(import_program(captured.program).module, to="tile")
    staged = [op.source.name_hint for op in module.walk() if isinstance(op, tile.StageOp)]
    assert staged == ["x1_b"]


def test_a_mod_of_multiples_is_bounded_by_their_step() -> None:
    """``(16 * d0 + 256 * d1) mod 64`` is a multiple of 16: at most 48, so a box of 16
    from it stays inside 64 (the tile.stage verifier's range)."""
    from xdsl.ir.affine import AffineExpr

    from deplodock.dialects.affine_syntax import expr_multiple, expr_range

    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    expr = (d0 * 16 + d1 * 256) % 64
    assert expr_multiple(d0 * 16 + d1 * 256) == 16
    assert expr_range(expr, [(0, 100), (0, 7)]) == (0, 48)
    assert expr_range((d0 * 16 + 4) % 64, [(0, 100)]) == (0, 60)  # 4 + 16k: a multiple of 4
    assert expr_range((d0 * 16 + 1) % 64, [(0, 100)]) == (0, 63)


def _candidate_programs():
    """Each single-product candidate of the planner (tile, chunk and cap as the planner
    gives them), forced by ``register-tile``'s options on an ``x @ w.T`` of two of its block
    tiles each way and on one that is ragged in M and N (edge tiles)."""
    for c in CANDIDATES:
        if not c.single or c.mixed is True or c.provisional:
            continue
        t = c.tile
        label = f"{t.block_m}x{t.block_n}t{t.threads}k{t.bk}"
        for m, n in ((2 * t.block_m, 2 * t.block_n), (t.block_m + 3, t.block_n + 5)):
            expr = f"torch.nn.functional.linear(torch.randn(1,{m},96), torch.randn({n},96))"
            yield pytest.param(expr, t, id=f"{label}-{m}x{n}")


def _forced(expr: str, t: MatmulTile):
    """``expr`` lowered to the kernel level in tile ``t``, which the test asserts it got."""
    from deplodock.passes.tile.register_tile import RegisterTile

    captured = capture_expression(expr)
    imported = import_program(captured.program)
    option = RegisterTile(t.tm, t.tn, t.threads_m, t.threads_n, t.bk)
    lower(imported.module, to="kernel", options={"register-tile": option}, guard=False)
    schedules = [
        tile.schedule_of(k) for k in imported.module.walk() if isinstance(k, kernel.KernelOp)
    ]
    assert any(s is not None and s.thread_tile == (t.tm, t.tn) for s in schedules)
    return captured, imported


@pytest.mark.parametrize(("expr", "t"), list(_candidate_programs()))
def test_every_candidate_tile_compiles_without_spills(expr: str, t: MatmulTile) -> None:
    """NVRTC allocates every tile the planner may pick, divisible and with edge tiles,
    without spilling (its ``resident`` assumes the registers it measured)."""
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    _, imported = _forced(expr, t)
    for name, resources in compile_cuda(emit_cuda(imported.module), arch="sm_90").resources.items():
        assert resources.spill_stores == 0 and resources.spill_loads == 0, (name, resources)


@pytest.mark.gpu
@pytest.mark.parametrize(("expr", "t"), list(_candidate_programs()))
def test_every_candidate_tile_matches_torch_on_the_gpu(expr: str, t: MatmulTile) -> None:
    """Every tile the planner may pick, divisible and with edge tiles, against PyTorch on
    the GPU with the output poisoned first (an element not written would show)."""
    from deplodock.backends.cuda.driver import gpu_available
    from deplodock.backends.cuda.runtime import CompiledProgram

    if not gpu_available():
        pytest.skip("needs a CUDA GPU")
    captured, imported = _forced(expr, t)
    program = CompiledProgram(imported.module)
    args, _, reference = fresh_inputs(captured, imported.func, 5, device="cuda")
    for got, want in zip(program(*args, poison=True), reference(), strict=True):
        assert relative_error(got.cpu().numpy(), want.cpu().numpy()) <= RTOL
