"""``register-tile`` on contractions, pass by pass, in the SIMT interpreters.

Each program (the seed's relu(matmul(x + b, w)), a Linear with bias, a linear over a
3-D input's 128 tokens, a batched matmul with three axes, a linear whose N = 10 is no
multiple of 4 (only the rows are tiled), a hand-written max-plus product with a two-kind
reduce) goes through the pipeline's tile passes with ``register-tile{tm=4 tn=4}``
right after ``tileify`` (the cost model leaves shapes this small alone), then
``materialize``. After every pass the interpreters give the loop level's
result on the same random inputs; right after ``register-tile`` it is the same to the bit
(the same additions in the same order per output). The register-tiled kernel keeps one
tile per thread (no cooperative K loop), and its CUDA compiles for sm_90 without spills.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

from deplodock.backends.cuda.emit import emit_cuda
from deplodock.dialects import kernel, loop, make_context, tile
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.passes.tile.analysis import register_tile_of
from deplodock.pipeline import PASSES_TO, lower
from deplodock.reference import fresh_inputs, relative_error

RTOL = 1e-5
TILE = PASSES_TO["tile"]
assert TILE[0] == "tileify" and "register-tile" in TILE
PASSES = (*TILE, *PASSES_TO["kernel"])
OPTIONS = {"register-tile": {"tm": 4, "tn": 4}}  # not the cost model's: it leaves these


def _expression(expr: str):
    """A program lowered from PyTorch to the loop level: (text, inputs, eager reference)."""

    def source(rng: np.random.Generator):
        captured = capture_expression(expr)
        imported = import_program(captured.program)
        module = lower(imported.module, to="loop")
        seed = int(rng.integers(2**31))
        args, _, reference = fresh_inputs(captured, imported.func, seed, device="cpu")
        want = [w.numpy() for w in reference()]
        return str(module), [a.numpy().copy() for a in args], want

    return source


MAXPLUS = """
func.func @forward(%x: tensor<64x16xf32>, %w: tensor<16x48xf32>) -> tensor<64x48xf32> {
  %y = loop.kernel @k_maxplus ins(%xb = %x : tensor<64x16xf32>, %wb = %w : tensor<16x48xf32>)
      outs(%yb : tensor<64x48xf32>) {
    loop.for %m = 0 to 64 {
      loop.for %n = 0 to 48 {
        %s, %mx = loop.for %k = 0 to 16 reduce(add, max) -> (f32, f32) {
          %xv = loop.load %xb[%m, %k] : memref<64x16xf32>
          %wv = loop.load %wb[%k, %n] : memref<16x48xf32>
          %p = arith.mulf %xv, %wv : f32
          %q = arith.addf %xv, %wv : f32
          loop.yield %p, %q : f32, f32
        }
        %o = arith.subf %s, %mx : f32
        loop.store %o, %yb[%m, %n] : memref<64x48xf32>
      }
    }
  }
  func.return %y : tensor<64x48xf32>
}
"""


def _maxplus(rng: np.random.Generator):
    x = rng.standard_normal((64, 16)).astype(np.float32)
    w = rng.standard_normal((16, 48)).astype(np.float32)
    s = x.astype(np.float64) @ w
    mx = (x[:, :, None] + w[None, :, :]).max(axis=1)
    return MAXPLUS, [x, w], [s - mx]


@dataclass(frozen=True)
class Program:
    source: object
    factors: tuple[int, int]  # (TM, TN) register-tile picks by default
    loads: int  # distinct loads in the jammed K loop
    accumulators: int  # results of the jammed K loop


CORPUS: dict[str, Program] = {
    # x[m_i, k] (and x + b) once per row, b[k] once, w[k, n_j] once per column: 4 + 1 + 4
    "seed": Program(
        _expression(
            "torch.relu(torch.matmul(torch.randn(64,128) + torch.randn(128), torch.randn(128,96)))"
        ),
        (4, 4),
        9,
        16,
    ),
    "linear_bias": Program(
        _expression("torch.nn.Linear(64, 96)(torch.randn(1,64,64))"), (4, 4), 8, 16
    ),
    "linear_tokens": Program(
        _expression("torch.nn.functional.linear(torch.randn(1,128,64), torch.randn(64,64))"),
        (4, 4),
        8,
        16,
    ),
    "batched": Program(
        _expression("torch.matmul(torch.randn(2,32,32), torch.randn(2,32,48))"), (4, 4), 8, 16
    ),
    # N = 10: the columns stay one per thread, the rows are tiled by 4 (w[n, k] shared)
    "odd_columns": Program(
        _expression("torch.nn.functional.linear(torch.randn(1,144,64), torch.randn(10,64))"),
        (4, 1),
        5,
        4,
    ),
    # two accumulators of two kinds per output: 32 accumulators, add and max kept apart
    "maxplus": Program(_maxplus, (4, 4), 8, 32),
}


@dataclass
class Stages:
    texts: dict[str, str]  # "input", then each pass's name -> the module printed after it
    inputs: list[np.ndarray]
    expected: list[np.ndarray]  # the loop level's result
    reference: list[np.ndarray]


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


@functools.cache
def stages(name: str) -> Stages:
    """Lower one program pass by pass, verifying after each (cached per program)."""
    text, inputs, reference = CORPUS[name].source(np.random.default_rng(sum(map(ord, name))))
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    texts = {"input": str(module)}
    for pass_name in PASSES:
        get_pass(pass_name)(**OPTIONS.get(pass_name, {})).apply(ctx, module)
        module.verify()
        texts[pass_name] = str(module)
    return Stages(texts, inputs, run_forward(_parse(texts["input"]), inputs), reference)


def _kernel(text: str, kind: type):
    ops = [op for op in _parse(text).walk() if isinstance(op, kind)]
    assert len(ops) == 1, ops
    return ops[0]


# --- meaning ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CORPUS))
def test_loop_level_matches_the_reference(name: str) -> None:
    got = stages(name)
    for out, want in zip(got.expected, got.reference, strict=True):
        assert relative_error(out, want) <= RTOL


@pytest.mark.parametrize(("name", "pass_name"), [(n, p) for n in CORPUS for p in PASSES])
def test_pass_preserves_meaning(name: str, pass_name: str) -> None:
    got = stages(name)
    outputs = run_forward(_parse(got.texts[pass_name]), got.inputs)
    for i, (out, want) in enumerate(zip(outputs, got.expected, strict=True)):
        assert out.shape == want.shape
        assert not np.isnan(out).any(), f"output {i}: elements left unwritten after {pass_name}"
        error = relative_error(out, want)
        assert error <= RTOL, f"output {i}: {pass_name} changed the result ({error:.2e})"


@pytest.mark.parametrize("name", list(CORPUS))
def test_register_tile_is_exact(name: str) -> None:
    """Each output adds the same products in the same order: equal to the bit."""
    got = stages(name)
    before = run_forward(_parse(got.texts["tileify"]), got.inputs)
    after = run_forward(_parse(got.texts["register-tile"]), got.inputs)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


# --- the schedule ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_tile(name: str) -> None:
    program, got = CORPUS[name], stages(name)
    before = _kernel(got.texts["tileify"], tile.KernelOp)
    after = _kernel(got.texts["register-tile"], tile.KernelOp)
    tm, tn = program.factors
    assert register_tile_of(after) == (tm, tn)
    want = [e for _, e, _ in before.axes]
    want[-2] //= tm
    want[-1] //= tn
    assert [e for _, e, _ in after.axes] == want
    reduces = [op for op in after.body.block.ops if isinstance(op, loop.ForOp) and op.is_reduce]
    assert len(reduces) == 1
    assert len(reduces[0].results) == program.accumulators
    loads = [op for op in reduces[0].body.block.ops if isinstance(op, loop.LoadOp)]
    assert len(loads) == program.loads
    stores = [op for op in after.walk() if isinstance(op, loop.StoreOp)]
    assert len(stores) == tm * tn


@pytest.mark.parametrize("name", list(CORPUS))
def test_one_tile_per_thread(name: str) -> None:
    """cooperative-reduce leaves the jammed K loop to one thread; every axis is placed."""
    got = stages(name)
    cooperative = got.texts["cooperative-reduce"]
    assert "tile.strided_for" not in cooperative and "tile.combine" not in cooperative
    placed = _kernel(got.texts["blockify-launch"], tile.KernelOp)
    assert all(binding in ("thread", "block") for _, _, binding in placed.axes)
    assert register_tile_of(placed) == CORPUS[name].factors


def test_long_k_keeps_one_tile_per_thread() -> None:
    """cooperative-reduce leaves a register-tiled kernel's K loop to each thread."""
    captured = capture_expression(
        "torch.nn.functional.linear(torch.randn(1,128,256), torch.randn(512,256))"
    )
    module = lower(import_program(captured.program).module, to="loop")
    ctx = make_context()
    for pass_name in ("tileify", "register-tile", "cooperative-reduce"):
        get_pass(pass_name)(**OPTIONS.get(pass_name, {})).apply(ctx, module)
    assert "tile.combine" not in str(module)


@pytest.mark.parametrize("name", list(CORPUS))
def test_idempotent_and_reads_back(name: str) -> None:
    text = stages(name).texts["register-tile"]
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    assert str(module) == text
    get_pass("register-tile")().apply(ctx, module)
    assert str(module) == text


def test_options() -> None:
    text = stages("seed").texts["tileify"]
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    get_pass("register-tile")(tm=1, tn=1).apply(ctx, module)
    assert str(module) == text  # both axes left alone: nothing to do
    get_pass("register-tile")(tm=2, tn=8).apply(ctx, module)
    module.verify()
    tiled = _kernel(str(module), tile.KernelOp)
    assert register_tile_of(tiled) == (2, 8)
    assert [e for _, e, _ in tiled.axes] == [32, 12]
    with pytest.raises(DiagnosticException, match="tm=0"):
        get_pass("register-tile")(tm=0, tn=2).apply(ctx, module)


def test_not_a_contraction_is_left_alone() -> None:
    captured = capture_expression("torch.nn.RMSNorm(256)(torch.randn(1,8,256))")
    module = lower(import_program(captured.program).module, to="loop")
    ctx = make_context()
    get_pass("tileify")().apply(ctx, module)
    text = str(module)
    get_pass("register-tile")().apply(ctx, module)
    assert str(module) == text


# --- CUDA ------------------------------------------------------------------------------------


def _compile_cuda():
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    return compile_cuda


@pytest.mark.parametrize("name", list(CORPUS))
def test_cuda_compiles_for_sm90_without_spills(name: str) -> None:
    compile_cuda = _compile_cuda()
    module = _parse(stages(name).texts["materialize"])
    kern = _kernel(stages(name).texts["materialize"], kernel.KernelOp)
    compiled = compile_cuda(emit_cuda(module), arch="sm_90")
    resources = compiled.resources[kern.sym_name.data]
    assert resources.spill_stores == 0 and resources.spill_loads == 0, resources
