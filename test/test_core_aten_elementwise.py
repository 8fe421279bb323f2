"""The elementwise math of PyTorch's Core ATen op set computes what eager PyTorch computes.

Each family of ops is one program of several outputs (so one capture and one lowering
cover many ops), run on the interpreters at the loop and the kernel level and compared
with eager PyTorch on the CPU: at torch's float32 tolerance for the transcendental
functions, exactly (and with the sign of zero) for rounding, division remainders, sign
and bit manipulation, exactly for integers. Inputs mix random values with the special
values the ops' semantics depend on (NaN, ±inf, ±0.0, halves, huge magnitudes, values
next to ±1), at shapes with a 1 and primes (7, 13), some broadcast against each other.
The kernels of every family compile with NVRTC for sm_90 without register spills.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplodock
from deplodock.dialects.interpreters.run import run_forward
from deplodock.errors import UserInputError
from deplodock.pipeline import lower

NAN, INF = float("nan"), float("inf")
SPECIAL = [
    NAN,
    INF,
    -INF,
    0.0,
    -0.0,
    0.5,
    -0.5,
    1.5,
    -2.5,
    2.5,
    0.49999997,
    1.0,
    -1.0,
    7.0,
    -7.0,
    1e30,
    -1e30,
    3e38,
    1e-20,
    -3.0,
]


def _mixed(shape: tuple[int, ...], seed: int, scale: float = 3.0, special=SPECIAL) -> torch.Tensor:
    """Random values of `shape` with the special values spread over it."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen) * scale
    flat = x.view(-1)
    picks = torch.randperm(flat.numel(), generator=gen)[: len(special)]
    flat[picks] = torch.tensor(special[: len(picks)])
    return x


def _unit(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Values in [-1, 1] (the inverse functions' domain), the edges and NaN among them."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=gen) * 2 - 1
    edges = [1.0, -1.0, 0.0, -0.0, 1 - 2**-24, -(1 - 2**-24), NAN, 1e-30, 2.0, 0.5]
    x.view(-1)[: len(edges)] = torch.tensor(edges)
    return x


def _ints(shape: tuple[int, ...], seed: int, low: int, high: int, dtype=torch.int64):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=gen, dtype=dtype)


# name -> (program, its inputs, how its outputs compare: "close", "exact" or "signed")
FAMILIES: dict[str, tuple[Callable, tuple[torch.Tensor, ...], str]] = {}


def family(name: str, compare: str, *inputs: torch.Tensor):
    def register(fn: Callable) -> Callable:
        FAMILIES[name] = (fn, inputs, compare)
        return fn

    return register


@family("transcendental", "close", _mixed((7, 13), 1))
def _transcendental(x):
    return (
        torch.log1p(x),
        torch.expm1(x),
        torch.exp2(x),
        torch.log2(x),
        torch.log10(x),
        torch.erf(x),
        torch.erfc(x),
        torch.special.erfcx(x),
        torch.tan(x),
        torch.sinh(x),
        torch.cosh(x),
        torch.atan(x),
        torch.asinh(x),
        torch.acosh(x.abs() + 1),
        torch.lgamma(x),
        torch.digamma(x),
    )


@family("inverse", "close", _unit((1, 13), 2))
def _inverse(u):
    return torch.asin(u), torch.acos(u), torch.atanh(u), torch.erfinv(u)


@family("rounding", "signed", _mixed((13, 7), 3))
def _rounding(x):
    return (
        torch.floor(x),
        torch.ceil(x),
        torch.trunc(x),
        torch.round(x),
        torch.round(x, decimals=2),
        torch.round(x * 100, decimals=-1),
        torch.sign(x),
        torch.signbit(x),
        torch.isnan(x),
        torch.isinf(x),
        torch.isfinite(x),
        -x,
        x.abs(),
    )


@family(
    "division",
    "signed",
    _mixed((13, 1), 4, special=SPECIAL[:-4]),
    _mixed((1, 7), 5, special=[0.0, -0.0, NAN, INF, -2.5, 3.0, -1.5]),
)
def _division(x, y):
    return (
        torch.remainder(x, y),
        torch.fmod(x, y),
        torch.div(x, y, rounding_mode="floor"),
        torch.div(x, y, rounding_mode="trunc"),
        torch.floor_divide(x, y),
        torch.remainder(x, -2.5),
        7.5 % y,
        torch.fmod(x, 1.5),
        torch.frac(x),
    )


@family("binary", "close", _mixed((7, 13), 6), _mixed((7, 13), 7))
def _binary(x, y):
    return (
        torch.atan2(x, y),
        torch.hypot(x, y),
        torch.hypot(x, y * NAN),
        torch.fmax(x, y),
        torch.fmin(x, y),
        torch.maximum(x, y),
        torch.pow(x.abs(), y),
        torch.pow(2.5, y),
        torch.pow(x, 2.7),
        torch.logaddexp(x, y),
        torch.xlogy(x, y),
    )


@family("bits", "signed", _mixed((7, 13), 8), _mixed((7, 13), 9))
def _bits(x, y):
    return torch.copysign(x, y), torch.nextafter(x, y), torch.copysign(x, -0.0)


@family("ldexp", "close", _mixed((13, 7), 10), _ints((13, 1), 11, -140, 140, torch.int32))
def _ldexp(x, e):
    return (torch.ldexp(x, e),)


@family(
    "activation",
    "close",
    _mixed((7, 13), 12, special=[NAN, 0.0, -0.0, 1e30, -1e30, 20.0, -20.0, 3.0, -3.0, 1.0]),
)
def _activation(x):
    return (
        F.elu(x),
        torch.ops.aten.elu(x, 0.7, 1.3, 0.4),
        F.selu(x),
        F.celu(x, 0.5),
        F.gelu(x),
        F.gelu(x, approximate="tanh"),
        F.leaky_relu(x, 0.2),
        F.softplus(x),
        F.softplus(x, beta=2, threshold=5),
        F.hardsigmoid(x),
        F.hardswish(x),
        F.mish(x),
        F.silu(x),
        F.threshold(x, 0.5, -2.0),
        F.relu6(x),
        F.hardtanh(x, -2.0, 0.5),
        torch.sinc(x),
        torch.logit(torch.sigmoid(x), 1e-3),
    )


@family("clamp", "close", _mixed((7, 13), 13), _mixed((1, 13), 14), _mixed((7, 1), 15))
def _clamp(x, lo, hi):
    return (
        torch.clamp(x, -1.5, 2.0),
        torch.clamp(x, NAN, 2.0),
        torch.clamp(x, min=0.3),
        torch.clamp(x, max=-0.3),
        torch.clamp(x, 2.0, -1.0),
        torch.clamp(x, lo, hi),
        torch.clamp(x, min=lo),
        torch.clamp_max(x, hi),
        torch.clamp_min(x, 0.25),
    )


@family(
    "integers",
    "exact",
    _ints((7, 13), 16, -60, 60),
    _ints((1, 13), 17, 1, 9),
    torch.tensor([[1], [-1], [2], [-2], [0], [3], [7]]),
)
def _integers(i, j, small):
    k = torch.where(j == 5, 4, j - 5)  # divisors -4..3, none 0 (undefined in torch)
    return (
        i.abs(),
        -i,
        torch.sign(i),
        torch.floor(i),
        torch.round(i),
        torch.remainder(i, k),
        torch.fmod(i, k),
        torch.div(i, k, rounding_mode="floor"),
        torch.div(i, k, rounding_mode="trunc"),
        torch.floor_divide(i, k),
        torch.pow(small, k),
        torch.pow(i, 5),
        torch.pow(3, j),
        torch.clamp(i, -7, 9),
        torch.clamp(i, -7.5, 9.5),
        torch.relu(i),
        F.hardtanh(i, -3, 4),
        torch.signbit(i),
        torch.isnan(i),
    )


_AMOUNTS = torch.tensor([[0, 1, 5, 30, 31, 32, 33, 40, 63, 64, 65, -1, -3]], dtype=torch.int32)


@family("shifts", "exact", _ints((7, 1), 18, -(2**31), 2**31 - 1, torch.int32), _AMOUNTS)
def _shifts(v, s):
    wide, amount = v.long() * 12345, s.long()
    return (
        torch.bitwise_left_shift(v, s),
        torch.bitwise_right_shift(v, s),
        v << 3,
        v >> 2,
        torch.bitwise_left_shift(wide, amount),
        torch.bitwise_right_shift(wide, amount),
        torch.bitwise_left_shift(v.to(torch.int8), s.to(torch.int8)),
    )


@family("float64", "close", _mixed((7, 13), 19).double(), _unit((7, 13), 20).double())
def _float64(x, u):
    return (
        torch.digamma(x),
        torch.lgamma(x),
        torch.erfinv(u),
        torch.special.erfcx(x),
        torch.erfc(x),
        torch.tan(x),
        torch.nextafter(x, u),
        torch.fmod(x, u),
        torch.remainder(x, u),
        torch.signbit(x),
        torch.hypot(x, u),
    )


# ---------------------------------------------------------------------- checks


def _assert_matches(got: np.ndarray, want: torch.Tensor, how: str, label: str) -> None:
    g = torch.as_tensor(np.asarray(got))
    assert tuple(g.shape) == tuple(want.shape), label
    if want.dtype == torch.bool:
        assert torch.equal(g.to(torch.bool), want), label
        return
    g = g.to(want.dtype)
    if how == "close" and want.is_floating_point():
        tol = 1e-7 if want.dtype == torch.float64 else 1.3e-5
        torch.testing.assert_close(g, want, rtol=tol, atol=tol, equal_nan=True, msg=label)
        return
    torch.testing.assert_close(g, want, rtol=0, atol=0, equal_nan=True, msg=label)
    if how == "signed" and want.is_floating_point():
        zero = want == 0
        assert torch.equal(torch.signbit(g[zero]), torch.signbit(want[zero])), (
            f"{label}: the sign of a zero differs"
        )


@functools.cache
def _lowered(name: str):
    """The family's program at the loop and at the kernel level, and eager's outputs."""
    fn, inputs, _ = FAMILIES[name]
    loop = deplodock.lower(fn, *inputs, to="loop")
    kernel = lower(loop.clone(), to="kernel")
    want = fn(*inputs)
    return loop, kernel, want


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize("level", ["loop", "kernel"])
def test_family_matches_eager(name: str, level: str) -> None:
    fn, inputs, how = FAMILIES[name]
    loop, kernel, want = _lowered(name)
    outputs = run_forward(loop if level == "loop" else kernel, [t.numpy() for t in inputs])
    assert len(outputs) == len(want)
    for k, (got, expected) in enumerate(zip(outputs, want, strict=True)):
        _assert_matches(got, expected, how, f"{name} output {k} at the {level} level")


def test_kernels_compile_with_nvrtc_without_spills() -> None:
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    from deplodock.backends.cuda.emit import emit_cuda

    source = "\n".join(emit_cuda(_lowered(name)[1]) for name in FAMILIES)
    assert "erfinvf(" in source and "lgammaf(" in source and "fmodf(" in source
    assert "erfinv(" in source and "lgamma(" in source  # the f64 family's double calls
    for name in FAMILIES:
        compiled = compile_cuda(emit_cuda(_lowered(name)[1]), arch="sm_90")
        spilling = [k for k, r in compiled.resources.items() if r.spills]
        assert compiled.resources and not spilling, f"{name}: {spilling} spill"


def test_neg_keeps_the_sign_of_zero() -> None:
    """-x of +0.0 is -0.0 (a later 1/x is -inf), as in torch."""
    x = torch.tensor([0.0, -0.0, 1.0])
    module = deplodock.lower(lambda v: 1 / -v, x, to="loop")
    (got,) = run_forward(module, [x.numpy()])
    assert got.tolist() == [-INF, INF, -1.0]


def test_higher_polygamma_is_refused_with_its_reason() -> None:
    with pytest.raises(UserInputError, match="Hurwitz zeta"):
        deplodock.lower(lambda v: torch.polygamma(1, v), torch.rand(7), to="tensor")


def test_half_precision_nextafter_is_refused() -> None:
    x = torch.rand(7, dtype=torch.bfloat16)
    with pytest.raises(UserInputError, match="nextafter of bf16"):
        deplodock.lower(torch.nextafter, x, x, to="tensor")
