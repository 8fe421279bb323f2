"""NaN in, NaN out, as in PyTorch: relu and max reductions propagate NaN (MLIR's
``arith.maximumf``), in the interpreters and in the generated CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deplodock.backends.cuda.driver import gpu_available
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.pipeline import compile_program, lower

CASES = [
    "torch.relu(torch.randn(4, 64))",
    "torch.softmax(torch.randn(4, 64), -1)",
    "torch.amax(torch.randn(4, 64), -1)",
]


def _with_nan(shape: tuple[int, ...]) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x[1, 5] = np.nan
    return x


def _program(expr: str):
    return import_program(capture_expression(expr).program).module


@pytest.mark.parametrize("expr", CASES)
def test_interpreter_propagates_nan(expr: str) -> None:
    x = _with_nan((4, 64))
    (got,) = run_forward(lower(_program(expr), to="kernel"), [x])
    want = eval(expr.replace("torch.randn(4, 64)", "torch.from_numpy(x)")).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("expr", CASES)
def test_cuda_propagates_nan(expr: str) -> None:
    x = _with_nan((4, 64))
    (got,) = compile_program(_program(expr))(torch.from_numpy(x).cuda())
    want = eval(expr.replace("torch.randn(4, 64)", "torch.from_numpy(x)"))
    assert torch.equal(torch.isnan(got.cpu()), torch.isnan(want))
    finite = ~torch.isnan(want)
    assert torch.allclose(got.cpu()[finite], want[finite], rtol=1e-5, atol=1e-6)
