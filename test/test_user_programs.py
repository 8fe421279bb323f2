"""The programs a new user brought (issue 16): single ops and small blocks that were
refused before, each captured, lowered to the loop and the kernel level and run on the
interpreters against eager PyTorch on random inputs (odd extents: 1, primes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplodock
from deplodock.api import capture
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.pipeline import lower


def _block() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(13, 24),
        torch.nn.LayerNorm(24),
        torch.nn.GELU(),
        torch.nn.Dropout(0.2),
        torch.nn.Linear(24, 7),
    ).eval()


def _norms() -> torch.nn.Module:
    bn = torch.nn.BatchNorm1d(6).eval()
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    return torch.nn.Sequential(bn, torch.nn.GroupNorm(2, 6)).eval()


X = (3, 6, 7)  # the shape most programs take

PROGRAMS = {
    "layer_norm": (lambda x: F.layer_norm(x, (7,)), [X]),
    "gelu": (F.gelu, [X]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [X]),
    "clamp": (lambda x: x.clamp(-0.3, 0.4), [X]),
    "hardtanh": (F.hardtanh, [X]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), [X]),
    "elu": (F.elu, [X]),
    "selu": (F.selu, [X]),
    "softplus": (F.softplus, [X]),
    "hardsigmoid": (F.hardsigmoid, [X]),
    "mish": (F.mish, [X]),
    "log_softmax": (lambda x: F.log_softmax(x, -1), [X]),
    "logsumexp": (lambda x: torch.logsumexp(x, 1), [X]),
    "max_dim": (lambda x: torch.max(x, 1), [X]),
    "min_dim": (lambda x: torch.min(x, -1, keepdim=True), [X]),
    "maximum_other": (torch.max, [X, X]),
    "minimum_other": (torch.min, [X, (7,)]),
    "norm": (lambda x: torch.norm(x, dim=-1), [X]),
    "norm_all": (torch.norm, [X]),
    "batch_group_norm_eval": (_norms(), [X]),
    "transpose_T": (lambda x: x.T @ x, [(5, 3)]),
    "mT": (lambda x: x.mT + 1, [X]),
    "tril_triu": (lambda x: torch.tril(x) + torch.triu(x, 1) * 2, [(5, 7)]),
    "stack": (lambda x, y: torch.stack([x, y], 1), [X, X]),
    "split": (lambda x: x.split([2, 5], -1), [X]),
    "chunk": (lambda x: x.chunk(3, 1), [X]),
    "erf_square": (lambda x: torch.erf(x) + torch.square(x), [X]),
    "mv": (torch.mv, [(5, 7), (7,)]),
    "einsum": (lambda a, b: torch.einsum("bij,bjk->bik", a, b), [(2, 3, 5), (2, 5, 4)]),
    "argmax": (lambda x: x.argmax(-1), [X]),
    "var_std": (lambda x: (x.var(1), x.std(-1, keepdim=True)), [X]),
    "index_select": (lambda x: x.index_select(1, torch.tensor([4, 0, 4])), [X]),
    "gather": (lambda x: x.gather(2, torch.tensor([[[1, 0]] * 6] * 3)), [X]),
    "flip": (lambda x: x.flip(0, 2), [X]),
    "roll": (lambda x: x.roll(2, -1), [X]),
    "repeat": (lambda x: x.repeat(2, 1, 3), [X]),
    "pad": (lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), [X]),
    "prod": (lambda x: x.prod(-1), [X]),
    "dropout_eval_block": (_block(), [(2, 5, 13)]),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [(7,), (5, 3), (3, 7)]),
    "addmm_beta0": (
        lambda c, a, b: torch.addmm(c * np.nan, a, b, beta=0),
        [(5, 7), (5, 3), (3, 7)],
    ),
    "baddbmm": (torch.baddbmm, [(2, 5, 7), (2, 5, 3), (2, 3, 7)]),
    "addbmm": (lambda c, a, b: torch.addbmm(c, a, b, alpha=0.5), [(5, 7), (2, 5, 3), (2, 3, 7)]),
    "addmv": (torch.addmv, [(5,), (5, 3), (3,)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_user_program_matches_eager(name: str) -> None:
    fn, shapes = PROGRAMS[name]
    torch.manual_seed(0)
    inputs = [torch.randn(s) for s in shapes]
    with torch.no_grad():
        want = fn(*inputs)
    want = list(want) if isinstance(want, tuple | list) else [want]
    _, exported = capture(fn, *inputs)
    imported = import_program(exported)
    state = {**exported.state_dict, **exported.constants}
    user = iter(inputs)
    args = [
        (next(user) if g.kind == "input" else state[g.target]).detach().numpy()
        for g in imported.inputs
    ]
    module = imported.module
    for level in ("loop", "kernel"):
        module = lower(module, to=level)
        got = run_forward(module, args)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(
                np.asarray(g, dtype=np.float64),
                w.double().numpy(),
                rtol=1e-4,
                atol=1e-5,
                err_msg=f"{name} at the {level} level",
            )


def test_a_float_argument_is_an_input() -> None:
    """A model taking a Python float: the float is an input, not a constant."""
    module = deplodock.lower(lambda x, s: torch.tanh(x) * s, torch.randn(4), 0.5, to="loop")
    x = np.linspace(-1, 1, 4).astype(np.float32)
    for s in (0.5, 3.0):
        (got,) = run_forward(module, [x, np.float32(s)])
        np.testing.assert_allclose(got, np.tanh(x) * s, rtol=1e-6)
