"""The Python API: deplodock.lower and deplodock.compile (tools/api.py).

On the CPU: lowering a module and a plain function to every level, parameters bound by
address (no copies), output structure, and the callable's input errors. GPU-marked:
the compiled callable against eager, with and without a CUDA graph, on a side stream."""

from __future__ import annotations

import re

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

import deplodock
from deplodock.backends.cuda.driver import gpu_available
from deplodock.backends.cuda.runtime import InputError
from deplodock.errors import UserInputError
from deplodock.pipeline import LEVELS, level_of

needs_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")


class Block(torch.nn.Module):
    """Linear → ReLU → RMSNorm plus a buffer, returning two tensors."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(32, 64)
        self.norm = torch.nn.RMSNorm(64)
        self.register_buffer("shift", torch.randn(64))

    def forward(self, x):
        h = self.norm(torch.relu(self.linear(x)))
        return h + self.shift, h.sum(-1)


def add_relu(a, b):
    return torch.relu(a + b) * 2.0


@pytest.fixture(scope="module")
def block():
    torch.manual_seed(0)
    return Block().eval(), torch.randn(4, 32)


@pytest.fixture(scope="module")
def compiled_block(block):
    model, x = block
    return deplodock.compile(model, x)


@pytest.mark.parametrize("level", LEVELS)
def test_lower_a_module_to_every_level(block, level) -> None:
    model, x = block
    result = deplodock.lower(model, x, to=level)
    if level == "cuda":
        assert isinstance(result, str) and "__global__" in result
    else:
        assert isinstance(result, ModuleOp)
        result.verify()
        assert level_of(result) == level


@pytest.mark.parametrize("level", ["torch", "tensor", "loop", "tile", "kernel"])
def test_lower_a_function(level) -> None:
    a, b = torch.randn(8, 16), torch.randn(16)
    module = deplodock.lower(add_relu, a, b, to=level)
    assert level_of(module) == level
    assert str(module).count("tensor<8x16xf32>") >= 1


def test_lower_names_unknown_levels() -> None:
    with pytest.raises(ValueError, match="unknown level 'ptx'"):
        deplodock.lower(add_relu, torch.randn(2), torch.randn(2), to="ptx")


def test_unsupported_op_is_a_user_error_naming_it() -> None:
    with pytest.raises(UserInputError, match="special_zeta") as error:
        deplodock.compile(lambda x: torch.special.zeta(x, x), torch.randn(8, 8))
    # at the user's own line, not the API's wrapper of the function
    assert "at test/test_api.py:" in str(error.value)
    assert "tools/api.py" not in str(error.value)


def test_non_tensor_example_input_is_a_user_error() -> None:
    with pytest.raises(UserInputError, match="example input 1 is a str"):
        deplodock.lower(lambda x, n: x * len(n), torch.randn(4), "abc")


def test_python_numbers_are_program_inputs() -> None:
    """A float, an int and a bool passed to the program are 0-d inputs of torch's types
    for them, not constants: other values run the same program."""
    import numpy as np

    from deplodock.dialects.interpreters.run import run_forward

    def fn(x, scale, shift, flip):
        return torch.where(torch.as_tensor(flip), -x, x) * scale + shift

    module = deplodock.lower(fn, torch.randn(5), 0.5, 3, True, to="kernel")
    types = [str(a.type) for a in module.ops.first.body.block.args]
    assert types == ["tensor<5xf32>", "tensor<f32>", "tensor<i64>", "tensor<i1>"]
    x = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    for scale, shift, flip in ((0.5, 3, True), (-2.0, 7, False)):
        args = [x, np.float32(scale), np.int64(shift), np.bool_(flip)]
        (got,) = run_forward(module, args)
        want = fn(torch.from_numpy(x), scale, shift, flip).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_number_the_code_needs_as_a_number_is_a_constant() -> None:
    """``leaky_relu`` takes its slope only as a number: it is captured as the constant
    (``Compiled`` compiles again for another value)."""
    from deplodock.api import capture_numbers

    _, program, specialized = capture_numbers(
        lambda x, s: torch.nn.functional.leaky_relu(x, s), torch.randn(4), 0.25
    )
    assert specialized
    module = deplodock.lower(
        lambda x, s: torch.nn.functional.leaky_relu(x, s), torch.randn(4), 0.25, to="torch"
    )
    assert len(module.ops.first.body.block.args) == 1
    assert "negative_slope = 2.500000e-01" in str(module)


def test_parameters_and_buffers_are_bound_without_copies(block, compiled_block) -> None:
    model, x = block
    args = compiled_block.arguments(x)
    by_pointer = {a.data_ptr() for a in args}
    for tensor in [*model.parameters(), *model.buffers(), x]:
        assert tensor.data_ptr() in by_pointer
    params = [a for a in args if isinstance(a, torch.nn.Parameter)]
    assert {id(p) for p in params} == {id(p) for p in model.parameters()}  # the very objects


def test_a_replaced_parameter_is_seen_by_the_next_call(block, compiled_block) -> None:
    model, x = block
    old = model.norm.weight
    try:
        model.norm.weight = torch.nn.Parameter(torch.randn(64))
        assert any(a is model.norm.weight for a in compiled_block.arguments(x))
    finally:
        model.norm.weight = old


def test_function_constants_and_inputs(compiled_block) -> None:
    scale = torch.randn(16)
    compiled = deplodock.compile(lambda a: a * scale, torch.randn(8, 16))
    kinds = sorted(spec.kind for spec in compiled.inputs)
    assert kinds == ["constant", "input"]
    a = torch.randn(8, 16)
    args = compiled.arguments(a)
    assert any(t is a for t in args)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda x: (torch.randn(4, 31),), InputError, "expected shape (4, 32) float32"),
        (lambda x: (x.double(),), InputError, "expected dtype"),
        # a transposed view is made contiguous first (no contiguity error), then checked
        (lambda x: (torch.randn(32, 4).t(),), InputError, "input 0 (%x) is on cpu"),
        (lambda x: (x,), InputError, "is on cpu"),
        (lambda x: (x, x), TypeError, "expected 1 input tensors, got 2"),
    ],
    ids=["shape", "dtype", "non-contiguous", "cpu", "count"],
)
def test_input_errors(block, compiled_block, make, error, message) -> None:
    _, x = block
    with pytest.raises(error) as raised:
        compiled_block(*make(x))
    assert message in str(raised.value)


def test_repr(compiled_block) -> None:
    assert repr(compiled_block).startswith("<deplodock.Compiled Block: ")


# ------------------------------------------------------------------------------ GPU


def _on_gpu(block):
    model, x = block
    return model.cuda(), x.cuda()


def test_deplodock_stats_shows_where_the_time_goes(tmp_path, monkeypatch, capsys) -> None:
    """DEPLODOCK_STATS=1: deplodock.compile prints its stages (time, peak memory) on
    stderr; compiled again, the program cache answers and nothing is lowered."""
    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DEPLODOCK_CACHE", raising=False)
    monkeypatch.setenv("DEPLODOCK_STATS", "1")

    def scaled_softmax(x):
        return torch.softmax(x * 0.5, -1)

    x = torch.randn(8, 32)
    deplodock.compile(scaled_softmax, x)
    cold = capsys.readouterr().err
    assert "deplodock stats: deplodock.compile(scaled_softmax)" in cold
    for stage in ("capture (torch.export)", "import (torch dialect)", "lower to kernel, NVRTC"):
        assert stage in cold, cold
    assert " MB" in cold and "total" in cold
    deplodock.compile(scaled_softmax, x)
    warm = capsys.readouterr().err
    assert "program cache lookup" in warm and "lower to kernel" not in warm, warm
    monkeypatch.setenv("DEPLODOCK_STATS", "0")
    deplodock.compile(scaled_softmax, x)
    assert "deplodock stats" not in capsys.readouterr().err


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("graph", [False, True], ids=["launches", "cuda-graph"])
def test_compiled_module_matches_eager(block, graph) -> None:
    model, x = _on_gpu(block)
    fast = deplodock.compile(model, x, graph=graph)
    for _ in range(3):  # a graph: capture on the first call, replays after
        x = torch.randn_like(x)
        got, want = fast(x), model(x)
        assert isinstance(got, tuple) and len(got) == 2
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w.detach(), rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@needs_gpu
def test_graph_is_captured_again_when_weights_move(block) -> None:
    model, x = _on_gpu(block)
    fast = deplodock.compile(model, x, graph=True)
    fast(x)
    old = model.linear.weight
    try:
        model.linear.weight = torch.nn.Parameter(torch.randn_like(old))
        torch.testing.assert_close(fast(x)[0], model(x)[0].detach(), rtol=1e-5, atol=1e-5)
    finally:
        model.linear.weight = old


@pytest.mark.gpu
@needs_gpu
def test_compiled_program_takes_views_and_makes_constants_on_the_gpu() -> None:
    x = torch.randn(32, 48, device="cuda")
    fast = deplodock.compile(lambda a: torch.softmax(a, -1) * 2, x.t())
    torch.testing.assert_close(fast(x.t()), torch.softmax(x.t(), -1) * 2)
    # no tensor input: the program's lifted constant goes to the current CUDA device
    window = deplodock.compile(lambda n: torch.signal.windows.hann(7) * n, 3.0)
    torch.testing.assert_close(window(3.0), torch.signal.windows.hann(7, device="cuda") * 3.0)


@pytest.mark.gpu
@needs_gpu
def test_compiled_program_takes_numbers() -> None:
    x = torch.randn(33, device="cuda")
    fast = deplodock.compile(lambda x, s, k: x * s + k, x, 0.5, 2, cache=False)
    for s, k in ((0.5, 2), (-3.0, 11)):
        torch.testing.assert_close(fast(x, s, k), x * s + k)
    slope = deplodock.compile(lambda x, s: torch.nn.functional.leaky_relu(x, s), x, 0.1)
    for s in (0.1, 0.3):
        torch.testing.assert_close(slope(x, s), torch.nn.functional.leaky_relu(x, s))


@pytest.mark.gpu
@needs_gpu
def test_compiled_function_on_a_side_stream() -> None:
    a, b = torch.randn(64, 256, device="cuda"), torch.randn(256, device="cuda")
    fast = deplodock.compile(add_relu, a, b, poison=True)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        got = fast(a, b)
    stream.synchronize()
    torch.testing.assert_close(got, add_relu(a, b))


@pytest.mark.gpu
@needs_gpu
def test_module_left_on_cpu_is_named(block) -> None:
    model, x = block
    fast = deplodock.compile(model.cpu(), x)
    with pytest.raises(InputError, match="parameter linear.weight is on cpu"):
        fast(x.cuda())


# ------------------------------------------------------------- deplodock run MODEL


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_run_model_without_gpu_exits_2_at_once(capsys) -> None:
    from deplodock.cli import main

    assert main(["run", "tinyllama", "--layers", "1", "--seq", "8"]) == 2
    assert "no CUDA GPU on this machine" in capsys.readouterr().err


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_run_model_no_gpu_ok_compiles(capsys) -> None:
    pytest.importorskip("transformers")
    from deplodock.cli import main

    argv = ["run", "tinyllama", "--layers", "1", "--seq", "8", "-q", "--no-gpu-ok", "--stats"]
    assert main([*argv, "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert "tinyllama-1.1b, 1 layer, seq 8" in captured.out
    assert "kernels for sm_90" in captured.out
    # --stats: the compile's stages, each with its time and the peak memory after it
    table = captured.err[captured.err.index("deplodock stats: tinyllama-1.1b") :]
    for step in ("capture (torch.export)", "lower to loop", "lower to kernel, NVRTC", "total"):
        assert re.search(rf"^  {re.escape(step)} +\d+\.\d\d s", table, re.M), step
    assert re.search(r"lower to loop +\d+\.\d\d s +\d+ MB", table)


def test_run_builds_the_weights_on_the_cpu_when_the_gpu_cannot(monkeypatch, capsys) -> None:
    """``run MODEL`` builds its random weights on the GPU (seconds, where the CPU takes a
    minute for 7B); where that raises (out of memory, say) it builds them on the CPU and
    says why, rather than stopping."""
    import argparse

    from deplodock import cli

    asked = []

    def build(args, device):
        asked.append(device)
        if device == "cuda":
            raise RuntimeError("CUDA out of memory. Tried to allocate 28.00 GiB\nmore")
        return "built"

    monkeypatch.setattr(cli, "_model_unexported", build)
    assert cli._weights_on_gpu(argparse.Namespace()) == ("built", "cpu")
    assert asked == ["cuda", "cpu"]
    err = capsys.readouterr().err
    assert "not built on the GPU (CUDA out of memory. Tried to allocate 28.00 GiB)" in err
    monkeypatch.setattr(cli, "_model_unexported", lambda args, device: device)
    assert cli._weights_on_gpu(argparse.Namespace()) == ("cuda", "cuda")


@pytest.mark.gpu
@needs_gpu
def test_run_model_matches_transformers(capsys) -> None:
    pytest.importorskip("transformers")
    from deplodock.cli import main

    argv = ["run", "tinyllama", "--layers", "2", "--seq", "32", "-q", "--torch-backend"]
    assert main([*argv, "--no-torch-compile", "--stats"]) == 0, capsys.readouterr().out
    captured = capsys.readouterr()
    out = captured.out
    assert "logits (1, 32, 32000)" in out and "OK" in out and "GPU time per call" in out
    for step in ("build the model (random weights)", "first run, eager reference"):
        assert re.search(rf"^  {re.escape(step)} +\d+\.\d\d s +\d+ MB", captured.err, re.M)
    assert "(random weights, cuda)" in out  # built on the GPU
