"""Reductions, scans and norms of Core ATen, from PyTorch to the kernel level.

Each program is captured with torch.export, lowered to the loop level and then to the
kernel level, run on the interpreters at both, and compared with PyTorch eager on the
same random inputs: var/var_mean/std, the vector norms of every order, prod, any/all,
argmax/argmin and max.dim/min.dim (ties and NaNs: torch gives the first index, and NaN
is the maximum), cumprod, logcumsumexp and cummax/cummin (the last index), log_softmax,
layer/group/batch norm and nansum/nanmean; shapes with axes of 1, prime extents (7, 13)
and 0-d tensors. A layer norm over the last axis is one kernel, and the kernels compile
with NVRTC for sm_90 without register spills.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplodock
from deplodock.dialects import kernel, loop
from deplodock.dialects.interpreters.run import run_forward
from deplodock.pipeline import lower

Program = Callable[..., object]
NAN, INF = float("nan"), float("inf")


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _ties_and_nans() -> torch.Tensor:
    """Small integers (many ties), a NaN in row 1 (twice) and row 4, a row of -inf."""
    x = torch.randint(0, 3, (5, 13), generator=torch.Generator().manual_seed(1)).float()
    x[1, 4] = x[1, 9] = NAN
    x[4, 0] = NAN
    x[3] = -INF
    return x


def _with_nans() -> torch.Tensor:
    x = _randn(7, 13, seed=2)
    x[0, 3] = x[5, 0] = NAN
    x[2] = NAN
    return x


def _outputs(value: object) -> list[torch.Tensor]:
    return list(value) if isinstance(value, tuple | list) else [value]  # type: ignore[arg-type]


def _compare(got: list[np.ndarray], want: list[torch.Tensor], level: str) -> None:
    assert len(got) == len(want), level
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g = torch.as_tensor(np.asarray(g))
        assert tuple(g.shape) == tuple(w.shape), f"{level} output {k}: shape"
        if w.dtype in (torch.bool, torch.int64, torch.int32):
            assert torch.equal(g.to(w.dtype), w), f"{level} output {k}: {g} != {w}"
        else:
            torch.testing.assert_close(
                g.to(w.dtype), w, rtol=1.3e-5, atol=1e-5, equal_nan=True, msg=f"{level} {k}"
            )


def _check(fn: Program, *inputs: torch.Tensor):
    """`fn(*inputs)` at the loop and the kernel level against eager; the kernel module."""
    want = _outputs(fn(*inputs))
    module = deplodock.lower(fn, *inputs, to="loop")
    arrays = [t.numpy() for t in inputs]
    _compare(run_forward(module, arrays), want, "loop")
    lower(module, to="kernel")
    _compare(run_forward(module, arrays), want, "kernel")
    return module


CASES: dict[str, tuple[Program, tuple[torch.Tensor, ...]]] = {
    "var_mean": (
        lambda x: (
            *torch.var_mean(x, [0, 2], keepdim=True),
            torch.var(x, 1, correction=0),
            torch.std(x),
            torch.var(x + 1000.0, 1),  # a large mean does not cancel the variance
        ),
        (_randn(7, 13, 1),),
    ),
    "var_0d_and_one_element": (
        lambda s, x: (torch.var(s, 0), torch.var(s, 0, correction=0), torch.var(x, 0)),
        (torch.tensor(3.0), _randn(1, 13)),
    ),
    "vector_norms": (
        lambda x: tuple(
            torch.linalg.vector_norm(x, ord, dim=dim, keepdim=keep)
            for ord, dim, keep in [
                (2, None, False), (1, 1, False), (INF, 0, True), (-INF, [0, 1], False),
                (0, 1, True), (3.5, 1, False), (-1, 0, False),
            ]
        ) + (torch.linalg.vector_norm(x, dtype=torch.float64),),
        (_randn(7, 13),),
    ),
    "norm_0d": (lambda s: (torch.linalg.vector_norm(s), torch.linalg.vector_norm(s, 0)),
                (torch.tensor(-2.5),)),
    "prod": (
        lambda x, i, e: (torch.prod(x, 1), torch.prod(x), torch.prod(i, 0, keepdim=True),
                         torch.prod(e, 0)),
        (_randn(7, 13) * 0.5 + 1, torch.randint(-3, 4, (7, 3), dtype=torch.int32),
         torch.ones(0, 5)),
    ),
    "any_all": (
        lambda x, b, e: (torch.any(x, 1), torch.all(x, 0, keepdim=True), torch.any(b),
                         torch.all(b, 1), torch.any(e, 0), torch.all(e, 0),
                         torch.any(x.sum(), 0)),
        (torch.tensor([[0.0, NAN, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 3.0]]),
         torch.rand(7, 13, generator=torch.Generator().manual_seed(3)) > 0.2,
         torch.ones(0, 4)),
    ),
    "argmax_argmin": (
        lambda x: (torch.argmax(x, 1), torch.argmin(x, 1), torch.argmax(x), torch.argmin(x),
                   torch.argmax(x, 0, keepdim=True), torch.argmin(x, keepdim=True)),
        (_ties_and_nans(),),
    ),
    "argmax_int_and_0d": (
        lambda i, s: (torch.argmax(i, -1), torch.argmin(i), torch.argmax(s), torch.argmin(s, 0)),
        (torch.randint(0, 2, (7, 13), generator=torch.Generator().manual_seed(4)),
         torch.tensor(1.5)),
    ),
    "max_min_dim": (
        lambda x, b: (*torch.max(x, 1), *torch.min(x, 0, keepdim=True), *torch.max(b, 1)),
        (_ties_and_nans(), torch.rand(7, 13, generator=torch.Generator().manual_seed(5)) > 0.5),
    ),
    "scans": (
        lambda x, i, s: (torch.cumprod(x, 1), torch.cumprod(i, 0), torch.logcumsumexp(x * 30, 0),
                         torch.cumprod(s, 0), torch.logcumsumexp(s, 0)),
        (_randn(7, 13) * 0.5 + 1, torch.randint(-2, 3, (7, 1)), torch.tensor(0.5)),
    ),
    "cummax_cummin": (
        lambda x, b: (*torch.cummax(x, 1), *torch.cummin(x, 0), *torch.cummax(b, 1)),
        (_ties_and_nans(), torch.rand(3, 7, generator=torch.Generator().manual_seed(6)) > 0.5),
    ),
    "logcumsumexp_infinities": (
        lambda x: torch.logcumsumexp(x, 0),
        (torch.tensor([-INF, -INF, 1.0, -INF, INF, 2.0, NAN, 3.0]),),
    ),
    "log_softmax": (
        lambda x, s: (F.log_softmax(x, 1), F.log_softmax(x * 50, 0), F.log_softmax(s, 0),
                      F.softmax(s, 0)),
        (_randn(7, 13), torch.tensor(2.0)),
    ),
    "layer_norm": (
        lambda x, w, b: (F.layer_norm(x, [13], w, b), F.layer_norm(x * 3 + 5, [7, 13]),
                         *torch.ops.aten.native_layer_norm(x, [13], None, b, 1e-5)[1:]),
        (_randn(2, 7, 13), _randn(13, seed=1), _randn(13, seed=2)),
    ),
    "group_norm": (
        lambda x, w, b: (F.group_norm(x, 3, w, b), F.group_norm(x, 1),
                         *torch.ops.aten.native_group_norm(x, w, None, 2, 6, 7, 2, 1e-5)[1:]),
        (_randn(2, 6, 7), _randn(6, seed=1), _randn(6, seed=2)),
    ),
    "batch_norm": (
        lambda x, rm, rv, w, b: (F.batch_norm(x, rm, rv, w, b, training=False),
                                 F.batch_norm(x, None, None, w, None, training=True),
                                 F.instance_norm(x)),
        (_randn(2, 3, 7), _randn(3, seed=1), _randn(3, seed=2).abs() + 0.1, _randn(3, seed=3),
         _randn(3, seed=4)),
    ),
    "nansum_nanmean": (
        lambda x: (torch.nansum(x, 1), torch.nansum(x), torch.nanmean(x, 1, keepdim=True),
                   torch.nanmean(x)),
        (_with_nans(),),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_loop_and_kernel_levels_match_torch(name: str) -> None:
    fn, inputs = CASES[name]
    _check(fn, *inputs)


def test_argmax_finds_the_first_maximum_and_nan_wins() -> None:
    """The cases above, spelled out: ties give the first index, NaN beats every value."""
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, NAN, 5.0, NAN], [-INF, -INF, -INF, -INF]])
    module = _check(lambda x: (torch.argmax(x, 1), torch.argmin(x, 1)), x)
    got = run_forward(module, [x.numpy()])
    assert got[0].tolist() == [1, 1, 0]
    assert got[1].tolist() == [3, 1, 0]


def test_layer_norm_over_the_last_axis_is_one_kernel() -> None:
    """Mean, variance and the normalized output of a row in one loop nest, as rms_norm."""
    norm = torch.nn.LayerNorm(64)
    x = _randn(4, 64)
    module = deplodock.lower(norm, x, to="loop")
    kernels = [op for op in module.walk() if isinstance(op, loop.KernelOp)]
    assert len(kernels) == 1
    reduces = [op for op in kernels[0].walk() if isinstance(op, loop.ForOp) and op.results]
    assert len(reduces) == 2  # the sum and the squared deviations
    args = [p.detach().numpy() for p in (norm.weight, norm.bias)] + [x.numpy()]
    (got,) = run_forward(module, args)
    torch.testing.assert_close(torch.as_tensor(got), norm(x).detach(), rtol=1.3e-5, atol=1e-5)


def test_kernels_compile_with_nvrtc_without_spills() -> None:
    try:
        from deplodock.backends.cuda.emit import emit_cuda
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    for name in ("var_mean", "argmax_argmin", "scans", "layer_norm", "group_norm"):
        fn, inputs = CASES[name]
        module = deplodock.lower(fn, *inputs, to="kernel")
        kernels = [op.sym_name.data for op in module.walk() if isinstance(op, kernel.KernelOp)]
        assert kernels, name
        compiled = compile_cuda(emit_cuda(module), arch="sm_90")
        for k in kernels:
            assert not compiled.resources[k].spills, f"{name}: {k} spills"
