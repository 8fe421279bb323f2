"""The tile and kernel interpreters (SIMT-vectorised), and with them every schedule pass.

(a) Pass by pass: each program of a corpus (the loop kernels of ``test_schedule.py`` at
    small shapes, its hand-scheduled tile kernels, and the three seed programs lowered
    from PyTorch) goes through tileify, cooperative-reduce, blockify-launch and
    materialize one pass at a time; after each, the interpreters give the same result as
    the first level on the same random inputs (relative error 1e-5: reductions
    reassociate).
(b) Full-size schedules: the seed softmax (1,28,2048,2048) and RMSNorm (1,32,2048) at the
    kernel level, only their first, middle and last blocks run, the rows those blocks
    wrote compared with numpy and everything else still NaN.
(c) The race checker: deleting a barrier of RMSNorm's staging fill or shared-memory combine is a
    ``SharedMemoryRace`` naming the op; planted out-of-bounds stores are ``OutOfBounds``;
    the unmodified kernel runs clean.
(d) Exact primitive semantics: shuffles, barriers, masks, uninitialised shared memory.
(e) The real layers: every memory-bound kernel (no matmul-sized reduction) of the first
    decoder layer of TinyLlama and Qwen2.5-7B (real dimensions, seq 8), each alone, pass by
    pass as in (a), fed the tensor-level values of its inputs (test_kernel_by_kernel.py);
    at the kernel level only the first, middle and last blocks of each launch run.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.parser import Parser

from deplodock.dialects import kernel, loop, make_context
from deplodock.dialects.interpreters import kernel as kernel_interpreter
from deplodock.dialects.interpreters import tile as tile_interpreter
from deplodock.dialects.interpreters.kernel import (
    BarrierDivergence,
    Divergence,
    OutOfBounds,
    SharedMemoryRace,
    UninitializedRead,
    select_blocks,
)
from deplodock.dialects.interpreters.run import run_forward, trace_forward
from deplodock.frontends.export import graph_inputs, import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.pipeline import lower
from deplodock.reference import fresh_inputs, relative_error

RTOL = 1e-5


def _load_schedule_corpus():
    """test_schedule.py's kernel builders (pytest's importlib mode makes test modules
    unimportable by name, so load it by path, under a name of its own)."""
    path = Path(__file__).with_name("test_schedule.py")
    spec = importlib.util.spec_from_file_location("_simt_schedule_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SCHEDULE = _load_schedule_corpus()
PASSES = tuple((name, {}) for name in SCHEDULE.SCHEDULE)
CHUNKED = tuple(
    (name, {"chunks": 4} if name == "chunk-reduce" else {}) for name in SCHEDULE.SCHEDULE
)


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


# --- the corpus ----------------------------------------------------------------------------------

Source = Callable[[np.random.Generator], tuple[str, list[np.ndarray], list[np.ndarray] | None]]


@dataclass(frozen=True)
class Program:
    """Where a program starts (text, random inputs, a reference) and the passes it takes."""

    source: Source
    passes: tuple[tuple[str, dict], ...] = PASSES


def _text(ir: str, shapes: list[tuple[int, ...]], reference=None) -> Source:
    def source(rng: np.random.Generator):
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        return ir, inputs, (list(reference(*inputs)) if reference else None)

    return source


def _captured(expr: str, to: str = "loop"):
    """(module at level ``to``, the capture, the graph's inputs in order)."""
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    return lower(imported.module, to=to), captured, graph_inputs(imported.func)


def _seed(expr: str) -> Source:
    """A seed program lowered from PyTorch; random inputs and parameters, eager reference."""

    def source(rng: np.random.Generator):
        module, captured, _ = _captured(expr)
        seed = int(rng.integers(2**31))
        func = next(op for op in module.walk() if op.name == "func.func")
        args, _, reference = fresh_inputs(captured, func, seed, device="cpu")
        want = [w.numpy() for w in reference()]
        return str(module), [a.numpy().copy() for a in args], want

    return source


def _case(name: str, ir: str, shapes: list[tuple[int, ...]] | None = None) -> Program:
    """A loop kernel of test_schedule.py (``ir`` at a small shape), with its reference."""
    case = SCHEDULE.CASES[name]
    return Program(_text(ir, shapes or case.inputs, case.reference), case.passes)


CORPUS: dict[str, Program] = {
    "rms_norm": _case("rms_norm", SCHEDULE.rms_norm_ir(4, 256), [(1, 4, 256), (256,)]),
    "softmax": _case("softmax_small", SCHEDULE.softmax_ir(2, 4, 512), [(1, 2, 4, 512)]),
    "matmul_relu": _case("matmul_relu", SCHEDULE.matmul_relu_ir()),
    # 1448 columns: 362 float4 groups, so two blocks of 256 threads and a guard
    "silu_split_guarded": _case("silu", SCHEDULE.silu_ir(4, 1448), [(1, 4, 1448)]),
    "tanh_guarded": _case("tanh_guarded", SCHEDULE.tanh_ir()),
    "moments": _case("moments", SCHEDULE.moments_ir()),
    "sum_ragged": _case("sum", SCHEDULE.sum_ir(3000), [(3000,)]),
    "matmul_forced": _case("matmul_forced", SCHEDULE.matmul_relu_ir()),
    "half_warp": _case("half_warp", SCHEDULE.half_warp_ir()),
    "groups": _case("groups", SCHEDULE.groups_ir()),
    "combine_in_loop": _case("combine_in_loop", SCHEDULE.combine_in_loop_ir()),
    "seed_rms_norm": Program(_seed("torch.nn.RMSNorm(256)(torch.randn(1,4,256))")),
    "seed_softmax": Program(_seed("torch.nn.Softmax(dim=-1)(torch.randn(1,2,4,512))")),
    "seed_matmul_relu": Program(
        _seed("torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))")
    ),
    # chunk-reduce forced at small sizes: a whole-tensor sum, and a norm whose normalising
    # loop is chunked too (two rows, four chunks each)
    "sum_chunked": Program(_seed("torch.randn(8192).sum()"), CHUNKED),
    "rms_norm_chunked": Program(_seed("torch.nn.RMSNorm(8192)(torch.randn(1,2,8192))"), CHUNKED),
}


@dataclass
class Stages:
    texts: dict[str, str]  # "input", then each pass's name -> the module printed after it
    inputs: list[np.ndarray]
    expected: list[np.ndarray]  # the first level's result
    reference: list[np.ndarray] | None


@functools.cache
def stages(name: str) -> Stages:
    """Lower one corpus program pass by pass (verifying after each); cached per program."""
    program = CORPUS[name]
    text, inputs, reference = program.source(np.random.default_rng(sum(map(ord, name))))
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    texts = {"input": str(module)}
    for pass_name, options in program.passes:
        get_pass(pass_name)(**options).apply(ctx, module)
        module.verify()
        texts[pass_name] = str(module)
    expected = run_forward(_parse(texts["input"]), inputs)
    return Stages(texts, inputs, expected, reference)


# --- (a) pass by pass ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in CORPUS])
def test_first_level_matches_the_reference(name: str) -> None:
    got = stages(name)
    assert got.reference is not None
    for out, want in zip(got.expected, got.reference, strict=True):
        assert relative_error(out, want) <= RTOL


@pytest.mark.parametrize(
    ("name", "pass_name"),
    [(name, p) for name, program in CORPUS.items() for p, _ in program.passes],
)
def test_pass_preserves_meaning(name: str, pass_name: str) -> None:
    got = stages(name)
    module = _parse(got.texts[pass_name])
    outputs = run_forward(module, got.inputs)
    for i, (out, want) in enumerate(zip(outputs, got.expected, strict=True)):
        assert out.shape == want.shape
        assert not np.isnan(out).any(), f"output {i}: elements left unwritten after {pass_name}"
        error = relative_error(out, want)
        assert error <= RTOL, f"output {i}: {pass_name} changed the result ({error:.2e})"


@pytest.mark.parametrize("name", ["silu_split_guarded", "softmax", "groups"])
def test_chunked_runs_agree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tile kernels iterating their outer axes, launches running one block at a time."""
    monkeypatch.setattr(tile_interpreter, "TILE_LANES", 256)
    monkeypatch.setattr(kernel_interpreter, "LANES", 1)
    got = stages(name)
    for text in got.texts.values():
        outputs = run_forward(_parse(text), got.inputs)
        for out, want in zip(outputs, got.expected, strict=True):
            assert relative_error(out, want) <= RTOL


def test_corpus_reaches_every_level() -> None:
    """The pass-by-pass check covers tile kernels and kernel launches, not just loops."""
    names = {op.name for name in CORPUS for op in _parse(stages(name).texts["materialize"]).walk()}
    assert {"kernel.shfl_xor", "kernel.barrier", "kernel.shared", "scf.if"} <= names
    tiled = stages("silu_split_guarded").texts["blockify-launch"]
    assert "scf.if %in_range" in tiled and "tile.kernel" in tiled


# --- (b) full-size schedules on a few blocks -----------------------------------------------------


@functools.cache
def full_size(expr: str) -> tuple[str, list[np.ndarray]]:
    """The seed at full size, at the kernel level, with random inputs and parameters."""
    module, captured, specs = _captured(expr, to="kernel")
    rng = np.random.default_rng(7)
    inputs, users = [], iter(captured.example_inputs)
    for spec in specs:
        if spec.kind == "input":  # the capture's example (torch.randn, seeded): no copy
            inputs.append(next(users).numpy())
        else:
            shape = tuple(captured.module.get_parameter(spec.target).shape)
            inputs.append(rng.standard_normal(shape).astype(np.float32))
    return str(module), inputs


SOFTMAX = "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))"
RMS_NORM = "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
RMS_NORM_STAGED = "torch.nn.RMSNorm(2048)(torch.randn(1,4096,2048))"  # 32 MB: rows staged


def test_full_size_softmax_first_middle_last_blocks() -> None:
    text, (x,) = full_size(SOFTMAX)
    trace = trace_forward(_parse(text), [x], blocks="sample")
    (launch,) = trace.launches
    (grid,), block = launch.op.grid_shape[:1], launch.op.block_shape
    assert block == (256, 1, 1) and 57344 % grid == 0  # whole rows a block
    assert launch.blocks.tolist() == [0, grid // 2, grid - 1]
    per_block = 57344 // grid  # 1 (online softmax: 256 threads a row) or more rows
    written = launch.written(0)
    rows = np.unique(written // 2048)
    want = [b * per_block + r for b in (0, grid // 2, grid - 1) for r in range(per_block)]
    assert rows.tolist() == want
    assert written.size == len(want) * 2048
    (out,) = trace.outputs
    flat_x, flat_out = x.reshape(-1, 2048), out.reshape(-1, 2048)
    e = np.exp(flat_x[rows].astype(np.float64) - flat_x[rows].max(-1, keepdims=True))
    assert relative_error(flat_out[rows], e / e.sum(-1, keepdims=True)) <= RTOL
    assert np.isnan(out).sum() == out.size - written.size  # the skipped blocks: still NaN


def test_full_size_rms_norm_chosen_blocks() -> None:
    text, (w, x) = full_size(RMS_NORM)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + np.finfo(np.float32).eps) * w
    for blocks, rows in (("sample", [0, 16, 31]), ([5, -1], [5, 31]), (lambda n: [n - 2], [30])):
        trace = trace_forward(_parse(text), [w, x], blocks=blocks)
        written = trace.written(0)
        assert np.flatnonzero(written.any(-1).reshape(-1)).tolist() == rows
        assert written[0, rows].all()
        (out,) = trace.outputs
        assert np.isnan(out[~written]).all()
        assert relative_error(out[written], want[written]) <= RTOL


def test_block_selection() -> None:
    assert select_blocks(None, 4).tolist() == [0, 1, 2, 3]
    assert select_blocks("sample", 1).tolist() == [0]
    assert select_blocks("sample", 10).tolist() == [0, 5, 9]
    assert select_blocks([-1, 0, 0], 10).tolist() == [0, 9]
    with pytest.raises(ValueError, match="outside the grid"):
        select_blocks([10], 10)


# --- (c) the race checker on RMSNorm's shared-memory combine --------------------------------------


def _rms_kernel() -> tuple[ModuleOp, list[np.ndarray]]:
    text, inputs = full_size(RMS_NORM_STAGED)
    return _parse(text), inputs


def _shared_name(module: ModuleOp) -> str:
    """The combine's shared array (the staged row has one of its own, ``x_smem``)."""
    (shared,) = [
        op
        for op in module.walk()
        if isinstance(op, kernel.SharedOp) and op.sym_name.data != "x_smem"
    ]
    return shared.sym_name.data


def _combine_barriers(module: ModuleOp) -> list[kernel.BarrierOp]:
    """The combine's barriers: every one but the staging fill's (the first)."""
    return [op for op in module.walk() if isinstance(op, kernel.BarrierOp)][1:]


def test_unmodified_rms_norm_runs_clean() -> None:
    module, inputs = _rms_kernel()
    assert len([op for op in module.walk() if isinstance(op, kernel.BarrierOp)]) == 2
    trace = trace_forward(module, inputs, blocks=[0, 7])
    assert trace.written(0)[0, [0, 7]].all()


def _reversed_fill(module: ModuleOp) -> kernel.ForOp:
    """Make the staging fill copy the row back to front: thread t fills the elements that
    thread 255 - t reads (still a complete, correct fill). With the strides of
    materialize each thread reads back exactly what it wrote, which no checker can fault;
    reversed, every element crosses threads, as a vectorised fill's would. The fill's
    loops (one, or a load half into registers and a store half: ``holds_fill``) have their
    global loads and shared stores reversed; returns the last of them, which the fill's
    barrier follows."""
    loops = [
        op
        for op in module.walk()
        if isinstance(op, kernel.ForOp)
        and any(
            isinstance(o, kernel.StoreOp)
            and isinstance(o.buffer.owner, kernel.SharedOp | kernel.LocalOp)
            and o.buffer.owner.sym_name.data.startswith("x_smem")
            for o in op.walk()
        )
    ]
    for fill in loops:
        for access in fill.walk():
            if isinstance(access, kernel.LoadOp | kernel.StoreOp) and not isinstance(
                access.buffer.owner, kernel.LocalOp
            ):
                map_ = access.map.data
                last = len(map_.results) - 1
                flat = AffineExpr.dimension(map_.num_dims - 1)
                results = (*map_.results[:last], AffineExpr.constant(2047) - flat)
                access.properties["map"] = AffineMapAttr(AffineMap(map_.num_dims, 0, results))
    return loops[-1]


def test_missing_barrier_after_the_staging_fill_is_a_race() -> None:
    """stage-inputs' fill writes x_smem; without its barrier, reads race the writes."""
    module, inputs = _rms_kernel()
    fill = _reversed_fill(module)
    trace = trace_forward(module, inputs, blocks=[3])  # with the barrier: clean
    assert trace.written(0)[0, 3].all()
    barrier = fill.next_op
    assert isinstance(barrier, kernel.BarrierOp)
    barrier.detach()
    barrier.erase()
    with pytest.raises(SharedMemoryRace) as caught:
        run_forward(module, inputs, blocks=[3])
    message = str(caught.value)
    assert '"x_smem"[' in message and "block 3" in message


def test_missing_combine_barrier_is_a_race() -> None:
    """Lane 0 of each warp writes its partial; every thread then reads all of them."""
    module, inputs = _rms_kernel()
    (barrier,) = _combine_barriers(module)
    barrier.detach()
    barrier.erase()
    with pytest.raises(SharedMemoryRace) as caught:
        run_forward(module, inputs, blocks=[3])
    message = str(caught.value)
    assert "kernel.load" in message and f'"{_shared_name(module)}"[' in message
    assert "block 3" in message and message.count("thread ") >= 2
    assert "with no kernel.barrier between" in message


def _shift_last_index(op: kernel.StoreOp) -> None:
    map_ = op.map.data
    results = (*map_.results[:-1], map_.results[-1] + AffineExpr.constant(1))
    op.properties["map"] = AffineMapAttr(AffineMap(map_.num_dims, 0, results))


@pytest.mark.parametrize("target", ["global", "shared"])
def test_planted_out_of_bounds_store(target: str) -> None:
    module, inputs = _rms_kernel()
    stores = [op for op in module.walk() if isinstance(op, kernel.StoreOp)]
    shared = [
        s
        for s in stores
        if isinstance(s.buffer.owner, kernel.SharedOp)
        and s.buffer.owner.sym_name.data == _shared_name(module)
    ]
    outputs = [
        s for s in stores if not isinstance(s.buffer.owner, kernel.SharedOp | kernel.LocalOp)
    ]
    store = shared[0] if target == "shared" else outputs[0]
    _shift_last_index(store)
    with pytest.raises(OutOfBounds) as caught:
        run_forward(module, inputs, blocks=[31])
    message = str(caught.value)
    assert "kernel.store" in message and "block 31" in message
    if target == "shared":
        assert f'"{_shared_name(module)}"[8]' in message and "thread 224" in message
    else:
        assert "[0, 31, 2048]" in message and "thread 255" in message


# --- (d) primitive semantics ---------------------------------------------------------------------


def _kernel_ir(threads: int, body: str, size: int = 64) -> str:
    return f"""
func.func @forward(%x: tensor<{size}xf32>) -> tensor<{size}xf32> {{
  %y = kernel.kernel @k grid(2, 1, 1) block({threads}, 1, 1)
      ins(%xb = %x : tensor<{size}xf32>) outs(%yb : tensor<{size}xf32>) {{
    %t = kernel.thread_id x
{body}
  }}
  func.return %y : tensor<{size}xf32>
}}
"""


def _run_kernel(threads: int, body: str, size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    (y,) = run_forward(_parse(_kernel_ir(threads, body, size)), [x])
    return x, y


@pytest.mark.parametrize("offset", [1, 2, 4, 8, 16])
def test_shfl_xor_reads_lane_xor_offset_within_the_warp(offset: int) -> None:
    x, y = _run_kernel(
        64,
        f"""
    %v = kernel.load %xb[%t] : memref<64xf32>
    %s = kernel.shfl_xor %v, {offset} : f32
    kernel.store %s, %yb[%t] : memref<64xf32>""",
    )
    np.testing.assert_array_equal(y, x[np.arange(64) ^ offset])


def test_shfl_xor_butterfly_gives_every_lane_its_warp_sum() -> None:
    steps, value = [], "%v"
    for offset in (16, 8, 4, 2, 1):
        steps.append(f"    %x{offset} = kernel.shfl_xor {value}, {offset} : f32")
        steps.append(f"    %w{offset} = arith.addf {value}, %x{offset} : f32")
        value = f"%w{offset}"
    x, y = _run_kernel(
        64,
        "\n".join(
            [
                "    %v = kernel.load %xb[%t] : memref<64xf32>",
                *steps,
                f"    kernel.store {value}, %yb[%t] : memref<64xf32>",
            ]
        ),
    )
    want = np.repeat(x.reshape(2, 32).astype(np.float64).sum(-1), 32)
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_shuffle_by_part_of_a_warp_is_an_error() -> None:
    with pytest.raises(Divergence, match="only part of warp 0 of block 0"):
        _run_kernel(
            64,
            """
    %c16 = arith.constant 16 : index
    %low = arith.cmpi ult, %t, %c16 : index
    scf.if %low {
      %v = kernel.load %xb[%t] : memref<64xf32>
      %s = kernel.shfl_xor %v, 1 : f32
      kernel.store %s, %yb[%t] : memref<64xf32>
    }""",
        )


def test_shuffle_from_a_lane_the_block_lacks_is_an_error() -> None:
    with pytest.raises(Divergence, match="which a block of 48 threads lacks"):
        _run_kernel(
            48,
            """
    %v = kernel.load %xb[%t] : memref<64xf32>
    %s = kernel.shfl_xor %v, 16 : f32
    kernel.store %s, %yb[%t] : memref<64xf32>""",
        )


def test_barrier_reached_by_part_of_a_block_is_an_error() -> None:
    with pytest.raises(BarrierDivergence, match="32 of the 64 threads of block 0"):
        _run_kernel(
            64,
            """
    %c32 = arith.constant 32 : index
    %low = arith.cmpi ult, %t, %c32 : index
    scf.if %low {
      kernel.barrier
    }""",
        )


def test_block_uniform_branch_around_a_barrier_is_fine() -> None:
    x, y = _run_kernel(
        64,
        """
    %b = kernel.block_id x
    %c1 = arith.constant 1 : index
    %second = arith.cmpi eq, %b, %c1 : index
    %v = kernel.load %xb[%t] : memref<64xf32>
    scf.if %second {
      kernel.barrier
      kernel.store %v, %yb[%t] : memref<64xf32>
    }""",
    )
    np.testing.assert_array_equal(y, x)


def _shared_ir(body: str) -> str:
    return f"""
    %s = kernel.shared "buf" : memref<64xf32>
{body}"""


def test_shared_memory_through_a_barrier_reverses_a_block() -> None:
    x, y = _run_kernel(
        64,
        _shared_ir("""
    %v = kernel.load %xb[%t] : memref<64xf32>
    kernel.store %v, %s[%t] : memref<64xf32>
    kernel.barrier
    %r = kernel.load %s[63 - %t] : memref<64xf32>
    kernel.store %r, %yb[%t] : memref<64xf32>"""),
    )
    np.testing.assert_array_equal(y, x[::-1])


def test_read_after_write_across_warps_without_barrier_is_a_race() -> None:
    with pytest.raises(SharedMemoryRace, match=r'"buf"\[63\]: thread 0 reads it, but thread 63'):
        _run_kernel(
            64,
            _shared_ir("""
    %v = kernel.load %xb[%t] : memref<64xf32>
    kernel.store %v, %s[%t] : memref<64xf32>
    %r = kernel.load %s[63 - %t] : memref<64xf32>
    kernel.store %r, %yb[%t] : memref<64xf32>"""),
        )


def test_write_after_read_across_warps_without_barrier_is_a_race() -> None:
    with pytest.raises(SharedMemoryRace, match="writes it, but thread 63 read it"):
        _run_kernel(
            64,
            _shared_ir("""
    %v = kernel.load %xb[%t] : memref<64xf32>
    kernel.store %v, %s[%t] : memref<64xf32>
    kernel.barrier
    %r = kernel.load %s[63 - %t] : memref<64xf32>
    kernel.store %r, %s[%t] : memref<64xf32>
    kernel.store %r, %yb[%t] : memref<64xf32>"""),
        )


def test_one_store_of_different_values_to_one_element_is_a_race() -> None:
    with pytest.raises(SharedMemoryRace, match="in the same store"):
        _run_kernel(
            64,
            _shared_ir("""
    %v = kernel.load %xb[%t] : memref<64xf32>
    kernel.store %v, %s[0] : memref<64xf32>"""),
        )


def test_lanes_of_one_warp_are_warp_synchronous() -> None:
    """A warp reads its slot and rewrites it with no barrier: its lanes run in lockstep."""
    x, y = _run_kernel(
        64,
        _shared_ir("""
    %v = kernel.load %xb[%t] : memref<64xf32>
    kernel.store %v, %s[%t] : memref<64xf32>
    kernel.barrier
    %w = affine.apply affine_map<(d0) -> (d0 floordiv 32)> (%t)
    %a = kernel.load %s[%w * 32] : memref<64xf32>
    %b = kernel.load %s[%w * 32 + 1] : memref<64xf32>
    %ab = arith.addf %a, %b : f32
    kernel.store %ab, %s[%w * 32] : memref<64xf32>
    %r = kernel.load %s[%w * 32] : memref<64xf32>
    kernel.store %r, %yb[%t] : memref<64xf32>"""),
    )
    np.testing.assert_array_equal(y, np.repeat(x[[0, 32]] + x[[1, 33]], 32))


def test_reading_unwritten_shared_memory_is_an_error() -> None:
    with pytest.raises(UninitializedRead, match='"buf"\\[5\\], which no thread has written'):
        _run_kernel(
            64,
            _shared_ir("""
    %r = kernel.load %s[5] : memref<64xf32>
    kernel.store %r, %yb[%t] : memref<64xf32>"""),
        )


def test_per_thread_trip_counts_mask_finished_lanes() -> None:
    """``kernel.for %i = %t to 100 step 64``: threads below 36 run twice, the rest once."""
    x, y = _run_kernel(
        64,
        """
    %p = kernel.for %i = %t to 100 step 64 reduce(add) -> f32 {
      %v = kernel.load %xb[%i] : memref<128xf32>
      kernel.yield %v : f32
    }
    %one = arith.constant 1.0 : f32
    %n = kernel.for %j = %t to 100 step 64 reduce(add) -> f32 {
      kernel.yield %one : f32
    }
    kernel.store %p, %yb[%t] : memref<128xf32>
    kernel.store %n, %yb[%t + 64] : memref<128xf32>""",
        size=128,
    )
    t = np.arange(64)
    twice = t + 64 < 100
    np.testing.assert_allclose(y[:64], x[t] + np.where(twice, x[t + 64], 0), rtol=1e-6)
    np.testing.assert_array_equal(y[64:], np.where(twice, 2.0, 1.0))


# --- the tile level's own checks -----------------------------------------------------------------


def _tile_ir(body: str) -> str:
    return f"""
func.func @forward(%x: tensor<4x100xf32>) -> tensor<4xf32> {{
  %y = tile.kernel @k axes(%b : 4 = block, %t : 32 = thread)
      ins(%xb = %x : tensor<4x100xf32>) outs(%yb : tensor<4xf32>) {{
{body}
  }}
  func.return %y : tensor<4xf32>
}}
"""


def test_tile_strided_reduce_with_a_ragged_extent() -> None:
    x = np.random.default_rng(1).standard_normal((4, 100)).astype(np.float32)
    (y,) = run_forward(
        _parse(
            _tile_ir("""
    %p = tile.strided_for %k = %t to 100 step 32 reduce(max) -> f32 {
      %v = loop.load %xb[%b, %k] : memref<4x100xf32>
      loop.yield %v : f32
    }
    %m = tile.combine max %p across %t : f32
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      loop.store %m, %yb[%b] : memref<4xf32>
    }""")
        ),
        [x],
    )
    np.testing.assert_array_equal(y, x.max(-1))


def test_tile_combine_under_a_thread_mask_is_an_error() -> None:
    with pytest.raises(Divergence, match="only part of the group of 32 threads"):
        run_forward(
            _parse(
                _tile_ir("""
    %c8 = arith.constant 8 : index
    %low = arith.cmpi ult, %t, %c8 : index
    scf.if %low {
      %v = loop.load %xb[%b, %t] : memref<4x100xf32>
      %m = tile.combine add %v across %t : f32
      loop.store %m, %yb[%b] : memref<4xf32>
    }""")
            ),
            [np.zeros((4, 100), np.float32)],
        )


def test_tile_out_of_bounds_names_the_lane() -> None:
    with pytest.raises(OutOfBounds, match=r"%b = 0 \(block\), %t = 4 \(thread\) accesses %xb"):
        run_forward(
            _parse(
                _tile_ir("""
    %v = loop.load %xb[%b, %t * 25] : memref<4x100xf32>
    loop.store %v, %yb[%b] : memref<4xf32>""")
            ),
            [np.zeros((4, 100), np.float32)],
        )


# --- (e) every memory-bound kernel of both decoder layers, at full size --------------------------


def _kernel_by_kernel():
    """test_kernel_by_kernel.py, whose ``layer(name)`` builds a decoder layer at both levels.
    pytest imports test files as ``test.<stem>``: reuse that instance when it is loaded, so
    each layer is built once per session; else load the file by path."""
    module = sys.modules.get("test.test_kernel_by_kernel") or sys.modules.get("_simt_layers")
    if module is not None:
        return module
    path = Path(__file__).with_name("test_kernel_by_kernel.py")
    spec = importlib.util.spec_from_file_location("_simt_layers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


LAYER_MODELS = ["tinyllama", "qwen2.5-7b"]


def _ivs(value: SSAValue) -> set[SSAValue]:
    """The loop induction variables ``value`` is computed from (through any ops)."""
    found: set[SSAValue] = set()
    pending, seen = [value], set()
    while pending:
        v = pending.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            if isinstance(v.owner.parent_op(), loop.ForOp):
                found.add(v)
        else:
            pending.extend(v.owner.operands)
    return found


def contraction(op: loop.KernelOp) -> bool:
    """Whether the kernel has a matmul-sized reduction: a reduce loop in which two loads
    each miss a different free loop around it (``x[m, k]`` misses ``n``, ``W[n, k]``
    misses ``m``), so every loaded element serves many outputs and the work is M·N·K.
    A norm's or softmax's reduction reads each element for one output row (a mask
    broadcast over heads misses one loop, but alone); such a kernel is memory-bound."""
    for reduce in op.walk():
        if not (isinstance(reduce, loop.ForOp) and reduce.is_reduce):
            continue
        free, parent = [], reduce.parent_op()
        while parent is not op:
            if isinstance(parent, loop.ForOp) and not parent.is_reduce:
                free.append(parent.induction_var)
            parent = parent.parent_op()
        missed = set()
        for load in reduce.walk():
            if isinstance(load, loop.LoadOp):
                used = set().union(*(_ivs(i) for i in load.indices))
                if miss := frozenset(f for f in free if f not in used):
                    missed.add(miss)
        if len(missed) > 1:
            return True
    return False


def alone(op: loop.KernelOp) -> ModuleOp:
    """A module whose ``@forward`` is the kernel alone: its inputs in, its results out."""
    types = [v.type for v in op.inputs]
    block = Block(arg_types=types)
    clone = op.clone(value_mapper=dict(zip(op.inputs, block.args, strict=True)))
    block.add_op(clone)
    block.add_op(ReturnOp(*clone.results))
    result_types = [r.type for r in clone.results]
    return ModuleOp([FuncOp("forward", (types, result_types), Region(block))])


@dataclass
class LayerKernel:
    name: str
    texts: dict[str, str]  # "input", then each pass's name -> the module after it
    inputs: list[np.ndarray]  # the tensor-level values of its inputs
    expected: list[np.ndarray]  # the loop level's result on them


@functools.cache
def layer_corpus(model: str) -> tuple[list[LayerKernel], list[str]]:
    """The memory-bound kernels of the decoder layer, each alone and lowered pass by pass
    (verified after each), fed the tensor-level values of its inputs; and the names of the
    contractions left out."""
    kbk = _kernel_by_kernel()
    layer = kbk.layer(model)
    corpus, left_out = [], []
    for op in kbk._body(layer.module):
        if not isinstance(op, loop.KernelOp):
            continue
        if contraction(op):
            left_out.append(op.sym_name.data)
            continue
        ctx, module = make_context(), alone(op)
        module.verify()
        texts = {"input": str(module)}
        for pass_name, options in PASSES:
            get_pass(pass_name)(**options).apply(ctx, module)
            module.verify()
            texts[pass_name] = str(module)
        inputs = [layer.tensor[kbk.ref(v)] for v in op.inputs]
        expected = run_forward(_parse(texts["input"]), inputs)
        corpus.append(LayerKernel(op.sym_name.data, texts, inputs, expected))
    return corpus, left_out


@pytest.mark.parametrize("model", LAYER_MODELS)
def test_layer_corpus_is_every_memory_bound_kernel(model: str) -> None:
    """Every kernel of the layer is in the corpus or a contraction (the projections are,
    whatever fusion merged into them); whatever else fusion leaves is in the corpus."""
    corpus, left_out = layer_corpus(model)
    layer = _kernel_by_kernel().layer(model)
    names = [op.sym_name.data for op in layer.module.walk() if isinstance(op, loop.KernelOp)]
    assert sorted([k.name for k in corpus] + left_out) == sorted(names)
    assert corpus and left_out


@pytest.mark.parametrize(("model", "pass_name"), [(m, p) for m in LAYER_MODELS for p, _ in PASSES])
def test_layer_kernel_pass_preserves_meaning(model: str, pass_name: str) -> None:
    """After each pass, each memory-bound kernel of the layer computes what its loop form
    computes on the tensor-level inputs. Tile kernels run whole; kernel-level launches run
    their first, middle and last blocks only (full-size grids), compared where written."""
    corpus, _ = layer_corpus(model)
    kbk = _kernel_by_kernel()
    problems = []
    for k in corpus:
        blocks = "sample" if pass_name == PASSES[-1][0] else None
        trace = trace_forward(_parse(k.texts[pass_name]), k.inputs, blocks=blocks)
        for i, (out, want) in enumerate(zip(trace.outputs, k.expected, strict=True)):
            written = trace.written(i)
            if not written.any():
                problems.append(f"@{k.name} output {i}: nothing written")
                continue
            if blocks is None and not written.all():
                problems.append(f"@{k.name} output {i}: {np.sum(~written)} elements unwritten")
            error, problem = kbk.compare(out[written], want[written])
            if problem is not None:
                problems.append(f"@{k.name} output {i}: {problem}")
    assert not problems, f"{model}, after {pass_name}:\n" + "\n".join(problems)
