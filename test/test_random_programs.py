"""Random PyTorch programs, end to end: a property-based differential test.

Hypothesis draws a program of a few steps over one to three inputs: elementwise ops of
one and two tensors (broadcast), reductions over a random axis (keepdim or not),
views (transpose, flatten, slice, unsqueeze, expand), cat, where, softmax, matmul,
with extents drawn from 0, 1, small numbers and primes. Each program is captured with
torch.export, lowered to the loop and the kernel level, run on the interpreters and
compared with eager PyTorch on the same inputs. A program that eager PyTorch rejects
(an amax over an empty axis) is not a program and is skipped; a refusal by deplodock of
an op drawn here, a crash or a wrong answer fails the test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deplodock
from deplodock.dialects.interpreters.run import run_forward

EXTENTS = (0, 1, 2, 3, 5, 7, 13)

UNARY = {
    "neg": torch.neg,
    "exp": torch.exp,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "abs": torch.abs,
    "sin": torch.sin,
    "square": torch.square,
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "erf": torch.erf,
    "log1p_abs": lambda x: torch.log1p(x.abs()),
    "clamp": lambda x: x.clamp(-0.5, 0.75),
    "floor": torch.floor,
    "softplus": torch.nn.functional.softplus,
    "sqrt_abs": lambda x: x.abs().sqrt(),
    "scale": lambda x: x * 1.5 - 0.25,
}
BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "div": lambda a, b: a / (b.abs() + 1),
    "where": lambda a, b: torch.where(a > b, a, b),
    "atan2": torch.atan2,
}
REDUCE = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin(d, keepdim=k),
    "softmax": lambda x, d, k: torch.softmax(x, d),
    "log_softmax": lambda x, d, k: torch.log_softmax(x, d),
    "var": lambda x, d, k: x.var(d, keepdim=k),
    "argmax": lambda x, d, k: x.argmax(d, keepdim=k).float(),
    "cumsum": lambda x, d, k: x.cumsum(d),
}


class Program:
    """A straight-line program: each step reads earlier values and adds one."""

    def __init__(self, steps: list[tuple], n_inputs: int):
        self.steps, self.n_inputs = steps, n_inputs

    def __call__(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = list(inputs)
        for step in self.steps:
            values.append(_apply(step, values))
        return values[-1], values[max(self.n_inputs, len(values) - 2)]

    def __repr__(self) -> str:
        return f"Program({self.steps})"


def _apply(step: tuple, values: list[torch.Tensor]) -> torch.Tensor:
    kind, *rest = step
    if kind == "unary":
        name, a = rest
        return UNARY[name](values[a % len(values)])
    if kind == "binary":
        name, a, b = rest
        x, y = values[a % len(values)], values[b % len(values)]
        return BINARY[name](x, _fit(y, x.shape))
    x = values[rest[-1] % len(values)]
    if kind == "reduce":
        name, dim, keep, _ = rest
        if x.dim() == 0:
            return x * 2
        return REDUCE[name](x, dim % x.dim(), keep)
    if kind == "transpose":
        return x.transpose(0, -1) if x.dim() >= 2 else x.unsqueeze(0)
    if kind == "flatten":
        return x.flatten()
    if kind == "slice":
        if x.dim() == 0 or x.shape[-1] < 2:
            return x[..., :1] if x.dim() else x
        return x[..., 1::2]
    if kind == "unsqueeze":
        return x.unsqueeze(rest[0] % (x.dim() + 1))
    if kind == "expand":
        return x.unsqueeze(0).expand(3, *x.shape)
    if kind == "cat":
        return torch.cat([x, x * 0.5], dim=-1) if x.dim() else torch.stack([x, x])
    if kind == "matmul":
        if x.dim() == 0:
            return x
        w = torch.arange(x.shape[-1] * 3, dtype=x.dtype).reshape(x.shape[-1], 3) / 7
        return x @ w
    raise AssertionError(kind)


def _fit(y: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """``y`` made to broadcast to ``shape``: itself if it does, else its mean (a 0-d)."""
    try:
        torch.broadcast_shapes(y.shape, shape)
        if torch.broadcast_shapes(y.shape, shape) == shape:
            return y
    except RuntimeError:
        pass
    return y.mean() if y.numel() else torch.zeros(())


def _index() -> st.SearchStrategy[int]:
    return st.integers(0, 6)


STEP = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), _index()),
    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), _index(), _index()),
    st.tuples(
        st.just("reduce"),
        st.sampled_from(sorted(REDUCE)),
        st.integers(0, 3),
        st.booleans(),
        _index(),
    ),
    st.tuples(
        st.sampled_from(["transpose", "flatten", "slice", "expand", "cat", "matmul"]), _index()
    ),
    st.tuples(st.just("unsqueeze"), st.integers(0, 3), _index()),
)
SHAPE = st.lists(st.sampled_from(EXTENTS), min_size=0, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shapes=st.lists(SHAPE, min_size=1, max_size=3),
    steps=st.lists(STEP, min_size=1, max_size=5),
    seed=st.integers(0, 2**16),
)
def test_random_programs_match_eager(shapes, steps, seed) -> None:
    from hypothesis import assume

    program = Program(steps, len(shapes))
    gen = torch.Generator().manual_seed(seed)
    inputs = [torch.randn(s, generator=gen) for s in shapes]
    try:
        want = program(*inputs)
    except (RuntimeError, IndexError, ValueError):
        assume(False)  # eager rejects it: not a program
    assume(all(w.numel() < 20000 for w in want))
    arrays = [t.numpy() for t in inputs]
    for level in ("loop", "kernel"):
        module = deplodock.lower(program, *inputs, to=level)
        got = run_forward(module, arrays)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(
                np.asarray(g, dtype=np.float64),
                w.double().numpy(),
                rtol=2e-4,
                atol=2e-5,
                equal_nan=True,
                err_msg=f"{level} level of {program!r} on {shapes}",
            )


def test_a_wrong_lowering_would_be_caught() -> None:
    """The comparison above fails on a wrong answer: the same check against a reference
    that is off by a little."""
    program = Program([("unary", "exp", 0)], 1)
    x = torch.randn(7)
    module = deplodock.lower(program, x, to="loop")
    (got, _) = run_forward(module, [x.numpy()])
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(got, (program(x)[0] * 1.001).numpy(), rtol=2e-4, atol=2e-5)
