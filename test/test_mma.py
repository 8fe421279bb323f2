"""Tensor cores: ``tile.mma`` / ``kernel.mma`` and the ``mma-contract`` matmul schedule.

(a) The emulation (``dialects/mma.py``) against a product assembled from the PTX ISA's
    m16n8k8 tf32 fragment table, written out here independently of ``FRAGMENTS``; tf32x3
    is fp32-accurate, tf32 is not.
(b) A hand-written tile kernel of two warps, each one product: the tile interpreter, then
    ``materialize`` and the kernel interpreter (the race checker's), give ``A B + C``; a
    warp split by a branch is an error; the emitted CUDA compiles with NVRTC to
    ``mma.sync``; swapping two A registers in the IR gives a wrong product.
(c) ``mma-contract`` on matmuls and linears through the whole pipeline to the kernel
    level, against float64 numpy, at shapes it applies to and shapes it leaves alone.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from deplodock.dialects import make_context
from deplodock.dialects.interpreters.run import run_forward
from deplodock.dialects.interpreters.tile import Divergence
from deplodock.dialects.mma import mma_arrays
from deplodock.passes import get_pass

RNG = np.random.default_rng(7)


def _ptx_matrices(a, b, c):
    """A (16x8), B (8x8), C (16x8) from lane registers, per the PTX ISA's table."""
    A, B, C = np.zeros((16, 8)), np.zeros((8, 8)), np.zeros((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        A[g, t], A[g + 8, t], A[g, t + 4], A[g + 8, t + 4] = (a[r][lane] for r in range(4))
        B[t, g], B[t + 4, g] = b[0][lane], b[1][lane]
        C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1] = (
            c[r][lane] for r in range(4)
        )
    return A, B, C


def _registers(n):
    return [RNG.standard_normal(32).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("precision, bound", [("tf32x3", 2e-6), ("tf32", 2e-2)])
def test_emulation_is_the_ptx_product(precision: str, bound: float) -> None:
    a, b, c = _registers(4), _registers(2), _registers(4)
    A, B, C = _ptx_matrices(a, b, c)
    want = A @ B + C
    got = mma_arrays(a, b, c, precision)
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    places = [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
    err = max(np.abs(got[r] - want[rows, cols]).max() for r, (rows, cols) in enumerate(places))
    assert err < bound
    if precision == "tf32":
        assert err > 1e-4  # tf32 keeps 10 mantissa bits: not fp32's product


def test_emulation_leading_dimensions_are_warps() -> None:
    a = [np.stack([x, 2 * x]) for x in _registers(4)]
    b = [np.stack([x, x]) for x in _registers(2)]
    c = [np.zeros((2, 32), np.float32) for _ in range(4)]
    d = mma_arrays(a, b, c, "tf32x3")
    np.testing.assert_allclose(d[0][1], 2 * d[0][0], rtol=1e-5, atol=1e-6)


KERNEL = """
func.func @forward(%a: tensor<2x16x8xf32>, %b: tensor<2x8x8xf32>, %c: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %d = tile.kernel @k_mma axes(%w : 2 = thread, %l : 32 = thread) ins(%ab = %a : tensor<2x16x8xf32>, %bb = %b : tensor<2x8x8xf32>, %cb = %c : tensor<2x16x8xf32>) outs(%db : tensor<2x16x8xf32>) {
    %a0 = loop.load %ab[%w, %l floordiv 4, %l mod 4] : memref<2x16x8xf32>
    %a1 = loop.load %ab[%w, %l floordiv 4 + 8, %l mod 4] : memref<2x16x8xf32>
    %a2 = loop.load %ab[%w, %l floordiv 4, %l mod 4 + 4] : memref<2x16x8xf32>
    %a3 = loop.load %ab[%w, %l floordiv 4 + 8, %l mod 4 + 4] : memref<2x16x8xf32>
    %b0 = loop.load %bb[%w, %l mod 4, %l floordiv 4] : memref<2x8x8xf32>
    %b1 = loop.load %bb[%w, %l mod 4 + 4, %l floordiv 4] : memref<2x8x8xf32>
    %c0 = loop.load %cb[%w, %l floordiv 4, (%l mod 4) * 2] : memref<2x16x8xf32>
    %c1 = loop.load %cb[%w, %l floordiv 4, (%l mod 4) * 2 + 1] : memref<2x16x8xf32>
    %c2 = loop.load %cb[%w, %l floordiv 4 + 8, (%l mod 4) * 2] : memref<2x16x8xf32>
    %c3 = loop.load %cb[%w, %l floordiv 4 + 8, (%l mod 4) * 2 + 1] : memref<2x16x8xf32>
    %d0, %d1, %d2, %d3 = tile.mma m16n8k8 tf32x3 a(A_REGS) b(%b0, %b1) c(%c0, %c1, %c2, %c3) : f32
    loop.store %d0, %db[%w, %l floordiv 4, (%l mod 4) * 2] : memref<2x16x8xf32>
    loop.store %d1, %db[%w, %l floordiv 4, (%l mod 4) * 2 + 1] : memref<2x16x8xf32>
    loop.store %d2, %db[%w, %l floordiv 4 + 8, (%l mod 4) * 2] : memref<2x16x8xf32>
    loop.store %d3, %db[%w, %l floordiv 4 + 8, (%l mod 4) * 2 + 1] : memref<2x16x8xf32>
  }
  func.return %d : tensor<2x16x8xf32>
}
"""  # noqa: E501


def _kernel(a_regs: str = "%a0, %a1, %a2, %a3"):
    return Parser(make_context(), KERNEL.replace("A_REGS", a_regs)).parse_module()


def _operands():
    a = RNG.standard_normal((2, 16, 8)).astype(np.float32)
    b = RNG.standard_normal((2, 8, 8)).astype(np.float32)
    c = RNG.standard_normal((2, 16, 8)).astype(np.float32)
    want = np.einsum("wmk,wkn->wmn", a.astype(np.float64), b.astype(np.float64)) + c
    return [a, b, c], want


def test_a_warp_product_at_the_tile_and_kernel_levels() -> None:
    module = _kernel()
    module.verify()
    inputs, want = _operands()
    (tile_out,) = run_forward(module, inputs)
    assert np.abs(tile_out - want).max() < 1e-5
    get_pass("materialize")().apply(make_context(), module)
    module.verify()
    assert "kernel.mma m16n8k8 tf32x3" in str(module)
    (kernel_out,) = run_forward(module, inputs)
    np.testing.assert_array_equal(kernel_out, tile_out)


def test_swapped_fragment_registers_give_a_wrong_product() -> None:
    inputs, want = _operands()
    (out,) = run_forward(_kernel("%a1, %a0, %a2, %a3"), inputs)
    assert np.abs(out - want).max() > 0.1


def test_a_warp_split_by_a_branch_is_an_error() -> None:
    text = KERNEL.replace("A_REGS", "%a0, %a1, %a2, %a3")
    text = text.replace(
        "    %d0, %d1, %d2, %d3 = tile.mma",
        "    %half = arith.constant 16 : index\n"
        "    %low = arith.cmpi ult, %l, %half : index\n"
        "    scf.if %low {\n"
        "    %e0, %e1, %e2, %e3 = tile.mma m16n8k8 tf32 a(%a0, %a1, %a2, %a3) b(%b0, %b1) "
        "c(%c0, %c1, %c2, %c3) : f32\n"
        "    }\n"
        "    %d0, %d1, %d2, %d3 = tile.mma",
    )
    module = Parser(make_context(), text).parse_module()
    inputs, _ = _operands()
    with pytest.raises(Divergence, match="only part of a warp"):
        run_forward(module, inputs)


@pytest.mark.parametrize(
    "change, replacement, message",
    [
        ("a(%a0, %a1, %a2, %a3)", "a(%a0, %a1, %a2)", "a is a fragment of 4 registers"),
        ("tf32x3", "fp16", "precision fp16 is not one of"),
        ("%l : 32 = thread", "%l : 20 = thread", "not whole warps"),
    ],
)
def test_the_verifier_names_the_rule(change: str, replacement: str, message: str) -> None:
    text = KERNEL.replace("A_REGS", "%a0, %a1, %a2, %a3").replace(change, replacement, 1)
    with pytest.raises(VerifyException, match=message):
        Parser(make_context(), text).parse_module().verify()


def test_the_emitted_cuda_compiles_to_mma_sync() -> None:
    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.backends.cuda.nvrtc import compile_cuda

    module = _kernel()
    get_pass("materialize")().apply(make_context(), module)
    source = emit_cuda(module)
    assert "dd_mma_m16n8k8_tf32x3(" in source
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in source
    assert compile_cuda(source).cubin


# --- mma-contract through the pipeline ------------------------------------------------------


class _Linear(torch.nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        self.l = torch.nn.Linear(k, n, bias=True)

    def forward(self, x):
        return torch.relu(self.l(x))


class _Matmul(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


class _Bmm(torch.nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


def _lowered(kind: str, m: int, k: int, n: int, precision: str):
    from deplodock.api import lower as api_lower
    from deplodock.pipeline import lower

    torch.manual_seed(0)
    if kind == "linear":
        module = _Linear(k, n)
        inputs = (torch.randn(m, k),)
        want = module(*inputs).detach().double().numpy()
        args = [
            module.l.weight.detach().numpy(),
            module.l.bias.detach().numpy(),
            inputs[0].numpy(),
        ]
    else:
        module = _Matmul() if kind == "matmul" else _Bmm()
        batch = () if kind == "matmul" else (3,)
        inputs = (torch.randn(*batch, m, k), torch.randn(*batch, k, n))
        want = (inputs[0].double() @ inputs[1].double()).numpy()
        args = [x.numpy() for x in inputs]
    lowered = api_lower(module, *inputs, to="loop")
    options = {"mma-contract": get_pass("mma-contract")(precision=precision)}
    lower(lowered, "kernel", options=options, guard=False)
    return lowered, args, want


@pytest.mark.parametrize(
    "kind, m, k, n",
    [
        ("linear", 64, 64, 128),
        ("matmul", 64, 64, 128),
        ("linear", 128, 96, 256),
        ("matmul", 130, 64, 130),  # edge tiles: guarded slabs, loads and stores
        ("linear", 97, 64, 130),
        ("bmm", 64, 48, 128),  # three products, a block axis for the batch
    ],
)
def test_contracted_matmuls_are_right(kind: str, m: int, k: int, n: int) -> None:
    module, args, want = _lowered(kind, m, k, n, "tf32x3")
    text = str(module)
    assert "kernel.mma m16n8k8 tf32x3" in text and "mma = tf32x3" in text
    (out,) = run_forward(module, args)
    assert np.abs(out - want).max() / np.abs(want).max() < 1e-5


def test_shapes_it_leaves_alone_stay_right() -> None:
    """37 x 61 x 100: the planner's tile has no warp layout; left to the FMA schedule."""
    module, args, want = _lowered("linear", 37, 61, 100, "tf32x3")
    assert "kernel.mma" not in str(module)
    (out,) = run_forward(module, args)
    assert np.abs(out - want).max() / np.abs(want).max() < 1e-5


def test_tf32_is_less_accurate_than_tf32x3() -> None:
    errors = {}
    for precision in ("tf32", "tf32x3"):
        module, args, want = _lowered("matmul", 64, 64, 128, precision)
        (out,) = run_forward(module, args)
        errors[precision] = np.abs(out - want).max() / np.abs(want).max()
    assert errors["tf32x3"] < 1e-5 < errors["tf32"]


def test_bad_options_are_refused() -> None:
    from xdsl.dialects.builtin import ModuleOp

    with pytest.raises(ValueError, match="precision=fp8"):
        get_pass("mma-contract")(precision="fp8")
    with pytest.raises(DiagnosticException, match="no tf32 tensor-core product"):
        get_pass("mma-contract")(precision="tf32", arch="sm_75").apply(make_context(), ModuleOp([]))


def test_fragment_reads_get_a_conflict_free_pitch() -> None:
    """An [m][k] slab read at (g, t) is padded to a pitch of 4 mod 8 floats, a [k][n] one
    read at (t, g) to 8 mod 16: the 32 lanes of a warp on 32 banks (``pad_smem``)."""
    from deplodock.api import lower as api_lower
    from deplodock.pipeline import lower

    inputs = (torch.randn(64, 64), torch.randn(64, 128))
    module = api_lower(_Matmul(), *inputs, to="loop")
    options = {"mma-contract": get_pass("mma-contract")(precision="tf32x3")}
    lower(module, "tile", options=options, guard=False)
    text = str(module)
    assert "box [32, 16] pad 4" in text and "memref<32x20xf32>" in text  # a: [m][k]
    assert "box [16, 64] pad 8" in text and "memref<16x72xf32>" in text  # b: [k][n]


def test_the_emitter_accumulates_on_the_tensor_core() -> None:
    """``mma-contract``'s products of a zero C, yielded to add accumulators, are emitted
    with the accumulators as C (no FADD after each product); the meaning stays checked by
    the interpreters above and on the GPU (``docs/bench/gpu-2026-12-07-s42``)."""
    import re

    from deplodock.backends.cuda.emit import emit_cuda

    module, _, _ = _lowered("linear", 64, 64, 128, "tf32x3")
    source = emit_cuda(module)
    calls = re.findall(r"dd_mma_m16n8k8_tf32x3\(([^)]*)\);", source)
    assert calls and all("0.0f" not in call for call in calls)
    written = re.findall(r"^\s*(\w+) = (mma\w*)\.x;", source, re.M)
    assert len(written) == len(calls)
    for acc, _ in written:
        assert not re.search(rf"\b{acc} = {acc} \+", source)


def test_the_estimate_counts_a_products_flops() -> None:
    """``--resources``' roofline and the guard see a tensor-core product's FLOPs (64 a lane
    for m16n8k8), so a contracted matmul counts about the FMA schedule's FLOPs."""
    import math

    from deplodock.dialects import kernel
    from deplodock.passes.tile.schedule.estimate import thread_flops

    def total(precision: str) -> int:
        from deplodock.api import lower as api_lower
        from deplodock.pipeline import lower

        module = api_lower(_Matmul(), torch.randn(64, 64), torch.randn(64, 128), to="loop")
        options = {"mma-contract": get_pass("mma-contract")(precision=precision)}
        lower(module, "kernel", options=options if precision else None, guard=False)
        kernels = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
        return sum(
            thread_flops(k) * math.prod(k.grid_shape) * math.prod(k.block_shape) for k in kernels
        )

    fma, tc = total(""), total("tf32x3")
    assert 2 * 64 * 64 * 128 <= tc <= 1.1 * fma


def test_bench_compiles_with_pass_options(capsys) -> None:
    """``deplodock bench -p 'mma-contract{precision=tf32x3}'`` compiles every case so (the
    standard report against eager and torch.compile); a bad option is a user error."""
    from deplodock.bench import CaseResult, _compile_case, select
    from deplodock.cli import main
    from deplodock.dialects import kernel

    (case,) = select(["proj/q/tinyllama/S32"])
    options = {"mma-contract": get_pass("mma-contract")(precision="tf32x3")}
    _, program = _compile_case(case, "sm_90", CaseResult.of(case), options)
    assert any(isinstance(o, kernel.MmaOp) for k in program.kernels for o in k.walk())
    argv = ["bench", "--filter", "proj/q/tinyllama/S32", "--no-gpu-ok"]
    assert main([*argv, "-p", "mma-contract{precision=fp8}"]) == 1
    assert "precision=fp8" in capsys.readouterr().err
