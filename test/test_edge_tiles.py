"""Edge tiles (issue 19): matmuls whose M, N, K no block tile divides.

``split-matmul-k`` and ``register-tile`` round such a contraction up to the planner's
tile (``passes/tile/edge_tiles.py``) and guard the accesses that may leave their
buffers. Each program here is of irregular size (primes, one more than a multiple of
the tile) and must be padded (``guarded`` ops at the tile level, a register tile, no
kernel of one thread), or, where padding cannot apply, left to the default schedule;
either way the SIMT interpreters (the race checker included) give PyTorch's result at
the kernel level, with every block run, edge blocks included. The CUDA tests its guards
and compiles with NVRTC for sm_90 without spills.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from deplodock.backends.cuda.emit import emit_cuda
from deplodock.dialects import kernel, loop, make_context, tile
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.passes.tile.analysis import top_level_reduces
from deplodock.passes.tile.edge_tiles import pads_k_exactly
from deplodock.passes.tile.schedule.matmul import matmul_plan, padded_extents
from deplodock.pipeline import PASSES_TO, lower
from deplodock.reference import fresh_inputs, relative_error

PADDED = {  # the planner's tile does not divide these: guarded edge tiles
    "primes": "torch.matmul(torch.randn(257,263), torch.randn(263,269))",
    "one_past_tiles": "torch.matmul(torch.randn(129,65), torch.randn(65,257))",
    "linear_bias_relu": (
        "torch.relu(torch.nn.functional.linear(torch.randn(100,67), torch.randn(250,67), "
        "torch.randn(250)))"
    ),
    "batched": "torch.bmm(torch.randn(3,61,37), torch.randn(3,37,125))",
    "split_k": "torch.matmul(torch.randn(61,1031), torch.randn(1031,125))",
    "prologue_exp": "torch.matmul(torch.exp(torch.randn(61,32)), torch.randn(32,125))",
}
LEFT = {  # no tile pays: a matrix-vector product, a K that cannot be padded exactly
    "matvec": "torch.matmul(torch.randn(1,263), torch.randn(263,269))",
    "exp_k_unpaddable": "torch.matmul(torch.exp(torch.randn(64,37)), torch.randn(37,64))",
}


def _lowered(expr: str):
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    module = lower(imported.module, to="loop")
    args, _, reference = fresh_inputs(captured, imported.func, 11, device="cpu")
    return module, [a.numpy() for a in args], [w.numpy() for w in reference()]


def _guarded(module) -> bool:
    return any(getattr(o, "is_guarded", False) for o in module.walk())


@pytest.mark.parametrize("name", [*PADDED, *LEFT])
def test_edge_tiles_run_correct(name: str) -> None:
    module, inputs, want = _lowered({**PADDED, **LEFT}[name])
    lower(module, to="tile")
    kernels = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
    tiled = [k for k in kernels if (s := tile.schedule_of(k)) is not None and s.block_threads]
    if name in PADDED:
        assert _guarded(module) and tiled, [k.sym_name.data for k in kernels]
    else:  # a column reduction (threads on the outputs), its K maybe in ragged chunks
        assert not tiled
    lower(module, to="kernel")
    for k in module.walk():
        if isinstance(k, kernel.KernelOp):
            assert max(k.block_shape) > 1, k.sym_name.data  # no kernel of one thread
    for out, ref in zip(run_forward(module, inputs), want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5


@pytest.mark.parametrize("name", ["primes", "linear_bias_relu", "split_k"])
def test_each_tile_pass_preserves_meaning(name: str) -> None:
    """Pass by pass through the tile level: the pass that pads changes the module, and
    the interpreters agree with PyTorch after every pass."""
    module, inputs, want = _lowered(PADDED[name])
    ctx = make_context()
    padded_by = None
    for pass_name in PASSES_TO["tile"]:
        before = _guarded(module)
        get_pass(pass_name)().apply(ctx, module)
        module.verify()
        if _guarded(module) and not before:
            padded_by = pass_name
        if pass_name in ("tileify", "split-matmul-k", "register-tile", "stage-inputs"):
            for out, ref in zip(run_forward(module, inputs), want, strict=True):
                assert relative_error(np.asarray(out), ref) <= 1e-5, pass_name
    assert padded_by in ("split-matmul-k", "register-tile")
    stages = [s for s in module.walk() if isinstance(s, tile.StageOp)]
    assert stages and any(s.is_guarded for s in stages)


def _reduce_of(expr: str) -> loop.ForOp:
    module, _, _ = _lowered(expr)
    get_pass("tileify")().apply(make_context(), module)
    kernel_ = next(k for k in module.walk() if isinstance(k, tile.KernelOp))
    (reduce,) = top_level_reduces(kernel_)
    return reduce


@pytest.mark.parametrize(
    ("expr", "exact"),
    [
        ("torch.matmul(torch.randn(5,7), torch.randn(7,3))", True),
        ("torch.nn.functional.linear(torch.randn(5,7), torch.randn(3,7))", True),
        ("torch.matmul(torch.randn(5,7) + torch.randn(7), torch.randn(7,3))", True),
        ("torch.matmul(torch.exp(torch.randn(5,7)), torch.randn(7,3))", False),  # exp(0) = 1
        ("torch.randn(5,7).amax(-1)", False),  # not a sum
    ],
)
def test_pads_k_exactly(expr: str, exact: bool) -> None:
    assert pads_k_exactly(_reduce_of(expr)) is exact


def test_planner_prices_the_padded_work() -> None:
    # 257 x 269 with K 263: no tile divides; the chosen one is priced padded.
    tile_, splits = matmul_plan(257, 269, 263)
    mp, np_, kp = padded_extents(tile_, 257, 269, 263, splits)
    assert (mp, np_, kp) != (257, 269, 263) and mp * np_ * kp <= 2 * 257 * 269 * 263
    assert matmul_plan(257, 269, 263, pad_k=False) is None  # K 263 needs padding
    assert matmul_plan(257, 269, 263, pad=False) is None
    assert matmul_plan(1, 269, 263) is None  # a matrix-vector product wastes 32x
    assert matmul_plan(4096, 4096, 4096) == matmul_plan(4096, 4096, 4096, pad=False)


def test_guarded_cuda_compiles() -> None:
    module, _, _ = _lowered(PADDED["primes"])
    lower(module, to="kernel")
    source = emit_cuda(module)
    assert ": (float)0" in source  # a guarded load reads 0 outside
    assert re.search(r"if \(\(a0\w*\) < 257 && \(a1\w*\) < 269\)", source)  # a guarded store
    assert '4, %2;\\n"' in source and "? 4 : 0" in source  # cp.async's zero fill
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    compiled = compile_cuda(source, arch="sm_90")
    for name, report in compiled.resources.items():
        assert not report.spills, f"{name} spills: {report}"


def test_unaligned_operands_are_copied_aligned() -> None:
    """A large product whose rows are no multiple of 16 bytes: each operand is copied
    once into a zero-padded, aligned buffer (``align_operands``), and the product reads
    it unguarded, through slabs filled 16 bytes at a time."""
    module, _, _ = _lowered("torch.matmul(torch.randn(3001,3011), torch.randn(3011,2999))")
    lower(module, to="tile")
    kernels = {k.sym_name.data: k for k in module.walk() if isinstance(k, tile.KernelOp)}
    assert set(kernels) == {"k_matmul_align0", "k_matmul_align1", "k_matmul"}
    assert kernels["k_matmul_align0"].results[0].type.get_shape() == (3072, 3024)
    assert kernels["k_matmul_align1"].results[0].type.get_shape() == (3024, 3008)
    stages = [s for s in kernels["k_matmul"].walk() if isinstance(s, tile.StageOp)]
    assert len(stages) == 2 and not any(s.is_guarded for s in stages)
    stores = [s for s in kernels["k_matmul"].walk() if isinstance(s, loop.StoreOp)]
    assert stores and all(s.is_guarded for s in stores)  # the output keeps its shape


def test_aligned_copies_run_correct(monkeypatch) -> None:
    """The same at a size the interpreters run, the copy forced (any cost)."""
    from deplodock.passes.tile import edge_tiles

    monkeypatch.setattr(edge_tiles, "ALIGN_COST", 1e9)
    module, inputs, want = _lowered("torch.matmul(torch.randn(97,101), torch.randn(101,103))")
    lower(module, to="kernel")
    names = [k.sym_name.data for k in module.walk() if isinstance(k, kernel.KernelOp)]
    assert any("_align" in n for n in names), names
    for out, ref in zip(run_forward(module, inputs), want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5
