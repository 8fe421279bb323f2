"""Views, data movement, indexing and factory ops of Core ATen, from PyTorch to the kernel
level.

Each program is captured with torch.export, lowered to the loop level and then to the
kernel level, run on the interpreters at both, and compared with PyTorch eager on the
same random inputs: the `_copy` views, unfold and diagonal, split/unbind (several
results, an empty piece), flip/roll/repeat, constant_pad_nd (pads and crops),
gather/index_select, as_strided of a program input, copy, the scatters (plain, add,
every reduce with and without self, through a boolean mask, on the flattened tensor),
nonzero_static and the affine scatters (slice, select, diagonal, as_strided), on shapes
with axes of 1, prime extents, tensors with no elements and uint8 (its constants are i64
ones truncated: arith.constant takes signless integers only). A program of the new ops compiles with
NVRTC for sm_90 without register spills, and as_strided of a view is refused with its
reason rather than guessed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplodock
from deplodock.dialects import kernel
from deplodock.dialects.interpreters.run import run_forward
from deplodock.errors import UserInputError
from deplodock.pipeline import lower

Program = Callable[..., object]


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _randint(high: int, *shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


def _mask(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5


def _outputs(value: object) -> list[torch.Tensor]:
    return list(value) if isinstance(value, tuple | list) else [value]  # type: ignore[arg-type]


def _compare(got: list[np.ndarray], want: list[torch.Tensor], level: str) -> None:
    assert len(got) == len(want), level
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g = torch.as_tensor(np.asarray(g))
        assert tuple(g.shape) == tuple(w.shape), f"{level} output {k}: shape"
        if not w.dtype.is_floating_point:
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


def _set_rows(x: torch.Tensor, i: torch.Tensor, j: torch.Tensor, v: torch.Tensor):
    y = x.clone()
    y[i, :, j] = v  # index_put on axes apart: the broadcast index shape leads the values
    return y


def _masked_rows(x: torch.Tensor, m: torch.Tensor, v: torch.Tensor, w: torch.Tensor):
    y = x.clone()
    y[m] = v  # the k-th selected row takes the k-th row of v
    return y, torch.index_put(x, (m,), w, accumulate=True)  # one row for every selected row


CASES: dict[str, tuple[Program, tuple[torch.Tensor, ...]]] = {
    "copy_views": (
        lambda x: (torch.permute_copy(x, (2, 0, 1)), torch.ops.aten.view_copy(x, (7, 6)),
                   torch.narrow_copy(x, 1, 1, 2), torch.t_copy(x[0]),
                   torch.ops.aten.expand_copy(x[:, :1], (7, 5, 2))),
        (_randn(7, 3, 2),),
    ),
    "diff": (  # n = 0 is the input itself: prepend and append are ignored (OpInfo's sample)
        lambda x, p: (torch.diff(x, 0, 0, p, p), torch.diff(x, 2, 1, p.mT, x),
                      torch.diff(x > 0, 1, 0)),
        (_randn(5, 5), _randn(2, 5)),
    ),
    "unfold_diagonal": (
        lambda x: (x.unfold(1, 2, 3), x.unfold(2, 1, 1), torch.diagonal(x, 1, 0, 2),
                   torch.diagonal(x, -3, 2, 0), torch.diagonal(x, 9), torch.trace(x[0])),
        (_randn(7, 5, 7),),
    ),
    "split_unbind": (
        lambda x: (*x.split([2, 0, 5], 0), *x.split(2, 1), *x.unbind(1),
                   *torch.ops.aten.split_with_sizes_copy(x, [1, 2], 1), *x.chunk(3, 0)),
        (_randn(7, 3),),
    ),
    "flip_roll_repeat": (
        lambda x: (x.flip(0, 2), x.flip(1), x.roll(3, 0), x.roll((1, -8), (1, 2)), x.roll(5),
                   x.repeat(2, 1, 1, 3), torch.rot90(x, 1, (0, 2))),
        (_randn(7, 1, 5),),
    ),
    "pad": (
        lambda x: (F.pad(x, (1, 2, 0, 3)), F.pad(x, (-1, 2), value=-2.5), F.pad(x, (-2, -1)),
                   F.pad(x, (0, 0, 0, 0, 1, 1), value=7.0)),
        (_randn(2, 3, 5),),
    ),
    "gather_index_select": (
        lambda x, i, j, s: (torch.gather(x, 1, i), torch.gather(x, 0, i[:2, :1] % 3),
                            torch.index_select(x, 1, j), torch.index_select(x, 0, j[:1]),
                            torch.index_select(s, 0, j[:1] * 0)),
        (_randn(3, 7), _randint(7, 3, 4), _randint(3, 5, seed=1), torch.tensor(2.5)),
    ),
    "as_strided_and_copy": (
        lambda x, y: (x.as_strided((3, 4), (2, 5), 7), (x * 2).sum(0).as_strided((2, 2), (1, 3)),
                      torch.zeros(2, 7, 5, dtype=torch.int32).copy_(y),
                      torch.empty(3, 2).fill_(1.5)),
        (_randn(7, 5), _randn(7, 1) * 4),
    ),
    "scatter": (
        lambda x, i, s: (x.scatter(0, i, s), x.scatter(1, i, -1.5), x.scatter_add(0, i, s)),
        (_randn(5, 7), _randint(5, 3, 4), _randn(3, 5, seed=1)),
    ),
    "scatter_reduce": (
        lambda x, i, s: tuple(
            x.scatter_reduce(0, i, s, reduce, include_self=include)
            for reduce in ("sum", "prod", "mean", "amax", "amin")
            for include in (True, False)
        ),
        (_randn(5, 7), _randint(5, 11, 7), _randn(11, 7, seed=1)),
    ),
    "scatter_integers": (
        lambda x, i, s, b: (x.scatter_reduce(0, i, s, "mean"), x.scatter_add(0, i, s),
                            b.scatter(0, i[:2, :3] % 2, b[:, :3] == 0)),
        (torch.randint(-9, 9, (5, 7)), _randint(5, 11, 7), torch.randint(-9, 9, (11, 7)),
         _mask(2, 3)),
    ),
    "uint8": (
        lambda u, i: (F.pad(u, (1, 2), value=200), u.scatter_reduce(0, i, u[:3], "amax"),
                      u.scatter_reduce(0, i, u[:3], "sum", include_self=False),
                      torch.zeros(2, 3, dtype=torch.uint8), u.flip(1)),
        (torch.randint(0, 256, (5, 4), dtype=torch.uint8), _randint(5, 3, 4)),
    ),
    "index_put": (
        lambda x, i, v, w, j: (torch.index_put(x, (i,), v), torch.index_put(x, (i,), w, True),
                               _set_rows(x, i[:2], j, v[:2].reshape(2, 2, 3))),
        (_randn(5, 3, 2), torch.tensor([4, -1, 0, 4]), _randn(4, 3, 2, seed=1),
         _randn(2, seed=2), torch.tensor([[0], [1]])),
    ),
    "index_put_mask": (
        _masked_rows,
        (_randn(5, 3), torch.tensor([True, False, True, True, False]), _randn(3, 3, seed=1),
         _randn(3, seed=2)),
    ),
    "put_and_index_ops": (
        lambda x, i, s, j, t, u: (x.put(i, s), x.put(i, s, accumulate=True),
                                  x.index_add(1, j, t), x.index_reduce(1, j, t, "amax"),
                                  x.index_fill(0, j, 2.0), x.masked_scatter(x > 0, u)),
        (_randn(5, 3), torch.tensor([[0, 14], [-1, 0]]), _randn(2, 2, seed=1),
         torch.tensor([2, 0]), _randn(5, 2, seed=2), _randn(16, seed=3)),
    ),
    "nonzero_static": (
        lambda x, z: (torch.nonzero_static(x, size=9), torch.nonzero_static(x > 0, size=2),
                      torch.nonzero_static(z, size=3, fill_value=-5)),
        (torch.tensor([[0.0, 1.5, 0.0], [-2.0, 0.0, 3.0], [0.0, 0.0, 4.0]]), torch.zeros(4)),
    ),
    "affine_scatters": (
        lambda x, s, d: (torch.slice_scatter(x, s, 1, 1, 7, 3), torch.select_scatter(x, d, 1, -1),
                         torch.diagonal_scatter(x, d, 2),
                         torch.as_strided_scatter(x, s[:, :2], (5, 2), (1, 5), 1)),
        (_randn(5, 7), _randn(5, 2, seed=1), _randn(5, seed=2)),
    ),
    "zero_size": (
        lambda x, e, i: (x * 2, x.sum(0), x.sum(1), x.flip(0), F.pad(x, (1, 1)),
                         torch.cat([x, x], 0), x.reshape(5, 0), torch.zeros_like(x),
                         *e.split([0, 3, 0], 0), torch.gather(e, 0, i), e.index_select(0, i[:, 0]),
                         e.scatter_add(0, i, e[:0]), torch.arange(0, dtype=torch.float32)),
        (_randn(0, 5), _randn(3, 5), torch.zeros(0, 5, dtype=torch.int64)),
    ),
    "factories": (
        lambda x: (torch.eye(3, 5) + x, torch.linspace(-1, 1, 7), torch.linspace(0, 1, 1),
                   torch.ones_like(x, dtype=torch.int32), torch.full_like(x, 2.5),
                   torch.arange(3, 12, 2, dtype=torch.float64)),
        (_randn(3, 5),),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_loop_and_kernel_levels_match_torch(name: str) -> None:
    fn, inputs = CASES[name]
    _check(fn, *inputs)


def test_duplicate_indices_let_the_last_write_win() -> None:
    """PyTorch's CPU kernels write duplicate indices in order; so does the dense form."""
    x = torch.zeros(3)
    module = _check(
        lambda x, i, v: torch.index_put(x, (i,), v),
        x,
        torch.tensor([1, 1, 2, 1]),
        torch.tensor([5.0, 6.0, 7.0, 8.0]),
    )
    (got,) = run_forward(
        module, [x.numpy(), np.array([1, 1, 2, 1]), np.array([5.0, 6.0, 7.0, 8.0], np.float32)]
    )
    assert got.tolist() == [0.0, 8.0, 7.0]


def test_one_integer_cast_to_two_float_types_stays_two_casts() -> None:
    """linspace's shape: positions compared in f32 and scaled in f64, fused into one kernel;
    the two `sitofp` of one position are not one op (fuse's deduplication keeps them)."""
    _check(
        lambda s: torch.where(torch.arange(7) < 2.5, torch.arange(7).double() * s, 1.0),
        torch.tensor(0.5, dtype=torch.float64),
    )


def test_as_strided_of_a_view_is_refused() -> None:
    """A transposed view's storage is not the view: its reading by strides is refused."""
    with pytest.raises(UserInputError, match="as_strided of a view"):
        deplodock.lower(lambda x: x.t().as_strided((2, 2), (1, 3)), _randn(4, 5), to="tensor")


def test_kernels_compile_with_nvrtc_without_spills() -> None:
    try:
        from deplodock.backends.cuda.emit import emit_cuda
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    for name in (
        "flip_roll_repeat",
        "pad",
        "gather_index_select",
        "scatter_reduce",
        "index_put_mask",
        "affine_scatters",
        "zero_size",
    ):
        fn, inputs = CASES[name]
        module = deplodock.lower(fn, *inputs, to="kernel")
        kernels = [op.sym_name.data for op in module.walk() if isinstance(op, kernel.KernelOp)]
        assert kernels, name
        compiled = compile_cuda(emit_cuda(module), arch="sm_90")
        for k in kernels:
            assert not compiled.resources[k].spills, f"{name}: {k} spills"
