"""decompose preserves meaning: each program, captured with torch.export and lowered to
the ten dialect, is run by the interpreter on fresh random inputs and compared with
PyTorch eager (fp32, max|a-b| / max|b| <= 1e-5)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn
from xdsl.parser import Parser

from deplodock.dialects import make_context
from deplodock.dialects.interpreters.run import run_forward
from deplodock.dialects.torch import AtenOp
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes.torch.decompose import Decompose, UnsupportedOpsError

TOLERANCE = 1e-5


class Fn(nn.Module):
    """A function as a module, so torch.export can capture it."""

    def __init__(self, fn: Callable[..., torch.Tensor]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


class TransformersRMSNorm(nn.Module):
    """LlamaRMSNorm's arithmetic, as transformers writes it: separate aten ops."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x


def _rms_norm(shape: list[int], **kwargs: object) -> nn.Module:
    norm = nn.RMSNorm(shape, **kwargs)
    if norm.weight is not None:
        nn.init.normal_(norm.weight)
    return norm


def _lower(module: nn.Module, inputs: tuple[torch.Tensor, ...]):
    program = import_program(torch.export.export(module, inputs))
    Decompose().apply(make_context(), program.module)
    program.module.verify()
    assert not any(isinstance(op, AtenOp) for op in program.module.walk())
    return program


def _check(module: nn.Module, shapes: list[tuple[int, ...]], positive: bool = False) -> None:
    """Lower `module` for inputs of `shapes`, run it on fresh inputs, compare with eager.

    The inputs come from a generator of their own (seeded), so a test's inputs do not
    depend on which tests ran before it in the process (pytest-xdist deals them out): the
    mean of 48 draws can be near 0, and its relative error with it."""
    module.eval()
    generator = torch.Generator().manual_seed(2026)

    def sample() -> tuple[torch.Tensor, ...]:
        xs = tuple(torch.randn(s, generator=generator) for s in shapes)
        return tuple(x.abs() + 0.5 for x in xs) if positive else xs

    exported = torch.export.export(module, sample())
    program = _lower(module, sample())
    inputs = sample()
    state = {**exported.state_dict, **exported.constants}
    user = iter(inputs)
    args = [
        (next(user) if g.kind == "input" else state[g.target]).detach().numpy()
        for g in program.inputs
    ]
    (got,) = run_forward(program.module, args)
    with torch.no_grad():
        want = module(*inputs).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    error = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30)
    assert error <= TOLERANCE, f"relative error {error:.3g}"


SEEDS = [
    "torch.nn.RMSNorm(64)(torch.randn(2,4,64))",
    "torch.nn.Softmax(dim=-1)(torch.randn(2,3,5,7))",
    "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))",
]


@pytest.mark.parametrize("src", SEEDS)
def test_seed_expressions(src: str) -> None:
    captured = capture_expression(src)
    _check(captured.module, [tuple(x.shape) for x in captured.example_inputs])


CASES: dict[str, tuple[nn.Module, list[tuple[int, ...]]]] = {
    "transformers_rms_norm": (TransformersRMSNorm(64), [(2, 4, 64)]),
    "rms_norm_2d_eps": (_rms_norm([4, 16], eps=1e-5), [(3, 4, 16)]),
    "rms_norm_no_weight": (_rms_norm([32], elementwise_affine=False), [(5, 32)]),
    "softmax_dim1": (nn.Softmax(dim=1), [(2, 6, 3)]),
    "add_broadcast": (Fn(torch.add), [(3, 1, 5), (4, 1)]),
    "add_alpha": (Fn(lambda x, y: torch.add(x, y, alpha=2.5)), [(4, 5), (5,)]),
    "sub_broadcast": (Fn(torch.sub), [(4, 1), (1, 6)]),
    "mul_0d": (Fn(torch.mul), [(3, 4), ()]),
    "div_broadcast": (Fn(torch.div), [(2, 3, 4), (3, 1)]),
    "add_scalar": (Fn(lambda x: x + 1.5), [(3, 4)]),
    "sub_scalar": (Fn(lambda x: x - 2), [(3, 4)]),
    "rsub_scalar": (Fn(lambda x: 2 - x), [(3, 4)]),
    "mul_scalar": (Fn(lambda x: 3 * x), [(3, 4)]),
    "div_scalar": (Fn(lambda x: x / 7), [(3, 4)]),
    "maximum": (Fn(torch.maximum), [(3, 4), (4,)]),
    "relu": (Fn(torch.relu), [(3, 4)]),
    "relu_module": (nn.ReLU(), [(2, 3, 4)]),
    "neg_exp": (Fn(lambda x: torch.exp(-x)), [(3, 4)]),
    "tanh_sigmoid": (Fn(lambda x: torch.tanh(x) + torch.sigmoid(x)), [(3, 4)]),
    "silu": (Fn(nn.functional.silu), [(3, 4)]),
    "pow2": (Fn(lambda x: x.pow(2)), [(3, 4)]),
    "pow3": (Fn(lambda x: x**3), [(3, 4)]),
    "mean_keepdim": (Fn(lambda x: x.mean(-1, keepdim=True)), [(2, 3, 8)]),
    "mean_dims": (Fn(lambda x: x.mean((0, 2))), [(2, 3, 8)]),
    "mean_all": (Fn(lambda x: x.mean()), [(2, 3, 8)]),
    "sum_keepdim": (Fn(lambda x: x.sum(1, keepdim=True)), [(2, 3, 8)]),
    "amax": (Fn(lambda x: x.amax(-1)), [(2, 3, 8)]),
    "mm": (Fn(torch.mm), [(5, 7), (7, 3)]),
    "bmm": (Fn(torch.bmm), [(2, 5, 7), (2, 7, 3)]),
    "matmul_batch_broadcast": (Fn(torch.matmul), [(2, 1, 5, 7), (3, 7, 4)]),
    "matmul_vector_matrix": (Fn(torch.matmul), [(7,), (2, 7, 3)]),
    "matmul_matrix_vector": (Fn(torch.matmul), [(2, 5, 7), (7,)]),
    "matmul_dot": (Fn(torch.matmul), [(7,), (7,)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_decomposition_matches_eager(name: str) -> None:
    module, shapes = CASES[name]
    _check(module, shapes)


@pytest.mark.parametrize(
    "name,fn",
    [
        ("rsqrt", torch.rsqrt),
        ("sqrt_log", lambda x: torch.sqrt(x) + torch.log(x)),
        ("reciprocal", torch.reciprocal),
        ("pow_half", lambda x: x**0.5),
        ("pow_float", lambda x: x**1.7),
        ("pow_neg_half", lambda x: x**-0.5),
    ],
)
def test_positive_domain_ops(name: str, fn: Callable[..., torch.Tensor]) -> None:
    _check(Fn(fn), [(3, 4)], positive=True)


class Unsupported(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.kthvalue(x, 2, 0).values
        z = torch.sort(x + 1, dim=-1).values
        return torch.relu(y + z)


def test_unsupported_ops_are_listed_together() -> None:
    with pytest.raises(UnsupportedOpsError) as info:
        _lower(Unsupported(), (torch.randn(3, 4),))
    message = str(info.value)
    assert message.startswith("2 unsupported ops:")
    assert "aten.kthvalue.default at " in message and "aten.sort.default at " in message
    assert "y = torch.kthvalue(x, 2, 0).values" in message
    assert "z = torch.sort(x + 1, dim=-1).values" in message
    assert [e[0] for e in info.value.entries] == ["aten.kthvalue.default", "aten.sort.default"]


def test_unsupported_report_gives_reasons_and_counts() -> None:
    """A declined call says why; the same op on the same line is listed once."""
    text = """
    func.func @forward(%s: tensor<0x4xf32>, %x: tensor<4xf32>) -> (tensor<4xi64>, tensor<4xf32>) {
      %a = torch.aten "argmax.default"(self = %s) {dim = 0, source = "m.py:3: a = s.argmax(0)"} : (tensor<0x4xf32>) -> tensor<4xi64>
      %b = torch.aten "i0.default"(self = %x) {source = "m.py:4: b = x.i0()"} : (tensor<4xf32>) -> tensor<4xf32>
      %c = torch.aten "i0.default"(self = %b) {source = "m.py:4: b = x.i0()"} : (tensor<4xf32>) -> tensor<4xf32>
      func.return %a, %c : tensor<4xi64>, tensor<4xf32>
    }
    """  # noqa: E501
    module = Parser(make_context(), text).parse_module()
    with pytest.raises(UnsupportedOpsError) as info:
        Decompose().apply(make_context(), module)
    assert str(info.value).splitlines() == [
        "3 unsupported ops:",
        "  aten.argmax.default (argmax over an empty axis (torch refuses it)) at m.py:3: "
        "a = s.argmax(0)",
        "  aten.i0.default at m.py:4: b = x.i0() [2 times]",
    ]


TEN_PROGRAM = """
func.func @forward(%x: tensor<2x6xf32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<4xf32>) {
  %k = ten.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 1.0, 2.0, 3.0]]> : tensor<3x4xf32>
  %v = ten.index_map %x (d0, d1) -> ((d0 * 4 + d1) floordiv 6, (d0 * 4 + d1) mod 6) : tensor<2x6xf32> -> tensor<3x4xf32>
  %two = ten.map() : -> tensor<3x4xf32> {
    %c = arith.constant 2.0 : f32
    ten.yield %c : f32
  }
  %y = ten.map(%v, %k, %two) : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.subf %p, %c : f32
    ten.yield %q : f32
  }
  %prod = ten.reduce mul %y dims [1] : tensor<3x4xf32> -> tensor<3xf32>
  %min = ten.reduce min %y dims [0] : tensor<3x4xf32> -> tensor<4xf32>
  func.return %y, %prod, %min : tensor<3x4xf32>, tensor<3xf32>, tensor<4xf32>
}
"""  # noqa: E501


def test_tensor_interpreter_ops() -> None:
    """ten ops the decompositions rarely make: constants, reshaping views, mul/min."""
    module = Parser(make_context(), TEN_PROGRAM).parse_module()
    module.verify()
    x = np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32)
    k = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 1, 2, 3]], dtype=np.float32)
    y = x.reshape(3, 4) * k - 2
    got = run_forward(module, [x])
    for g, want in zip(got, [y, y.prod(1), y.min(0)], strict=True):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, want, rtol=1e-6)


def test_each_target_has_one_decomposition() -> None:
    from collections import Counter

    from deplodock.passes.torch.decompose import all_decompositions

    claims = Counter(t for d in all_decompositions() for t in d.targets)
    assert not [t for t, n in claims.items() if n > 1]
