"""A kernel that does not fit (NVRTC reports register spills) is compiled again asking for
one block an SM; a fused one that still spills is split again at the tile level, its
reduction moved into a kernel of its own, and the program keeps its meaning."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from xdsl.dialects.builtin import IntAttr
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects import kernel, make_context
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import graph_inputs, import_program
from deplodock.frontends.expression import capture_expression
from deplodock.pipeline import compile_fitting, lower

KERNEL_NAME = re.compile(r"__global__ void __launch_bounds__\([^)]*\) (\w+)\(")


def _spills(name: str, times: int = 2):
    """A stand-in for NVRTC: reports ``name`` spilling the first ``times`` times it is
    compiled (twice: as emitted, then asking for one block an SM)."""
    seen: list[str] = []

    def compile_source(source: str):
        names = KERNEL_NAME.findall(source)
        resources = {n: SimpleNamespace(spills=n == name and seen.count(n) < times) for n in names}
        seen.extend(names)
        return SimpleNamespace(resources=resources, names=names, source=source)

    return compile_source


def test_spilling_kernel_is_split_and_keeps_its_meaning() -> None:
    captured = capture_expression("torch.nn.RMSNorm(2048)(torch.randn(1,8,2048))")
    imported = import_program(captured.program)
    module = lower(imported.module, to="loop")
    rng = np.random.default_rng(0)
    specs = graph_inputs(imported.func)
    inputs = [
        rng.standard_normal(2048 if spec.kind == "param" else (1, 8, 2048)).astype(np.float32)
        for spec in specs
    ]
    x, w = (inputs[1], inputs[0]) if specs[0].kind == "param" else (inputs[0], inputs[1])
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + np.finfo(np.float32).eps) * w

    lowered, compiled, split = compile_fitting(module, _spills("k_rms_norm"))

    assert split == ["k_rms_norm"]
    names = [op.sym_name.data for op in lowered.walk() if isinstance(op, kernel.KernelOp)]
    assert names == ["k_rms_norm_chunks", "k_rms_norm"] == compiled.names
    (got,) = run_forward(lowered, inputs)
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-5


def test_a_program_that_fits_is_compiled_once() -> None:
    captured = capture_expression("torch.nn.RMSNorm(2048)(torch.randn(1,8,2048))")
    module = lower(import_program(captured.program).module, to="loop")
    lowered, compiled, split = compile_fitting(module, _spills("no_such_kernel"))
    assert split == [] and compiled.names == ["k_rms_norm"]


def test_a_kernel_that_spills_under_ptxas_own_cap_asks_for_one_block() -> None:
    """A kernel whose ``__launch_bounds__`` name no blocks an SM, left to ptxas's occupancy
    heuristic, spills: it is compiled again asking for one block (``kernel.kernel``'s
    ``resident(1)``, ``__launch_bounds__(256, 1)``), and is not split when that fits."""
    captured = capture_expression("torch.nn.RMSNorm(2048)(torch.randn(1,8,2048))")
    module = lower(import_program(captured.program).module, to="loop")
    lowered, compiled, split = compile_fitting(module, _spills("k_rms_norm", times=1))
    (norm,) = [op for op in lowered.walk() if isinstance(op, kernel.KernelOp)]
    assert split == [] and norm.min_blocks_per_sm == 1 and "resident(1)" in str(norm)
    assert "__launch_bounds__(256, 1) k_rms_norm(" in compiled.source
    reparsed = Parser(make_context(), str(lowered)).parse_module()  # resident(1) reads back
    assert str(reparsed) == str(lowered)
    with pytest.raises(VerifyException, match=r"resident\(0\) must be positive"):
        norm.resident = IntAttr(0)
        norm.verify()


BOUNDS = re.compile(r"__launch_bounds__\((\d+)(?:, (\d+))?\) (\w+)\(")


def test_a_capped_tile_that_spills_is_compiled_again_uncapped() -> None:
    """The cost model's launch-bounds cap (blocks an SM, fitted with one NVRTC) is dropped
    for a kernel that spills under it; the kernel is not split, and fits uncapped."""
    captured = capture_expression(
        "torch.nn.functional.linear(torch.randn(1,512,3584), torch.randn(3584,3584))"
    )
    module = lower(import_program(captured.program).module, to="loop")
    compiles: list[dict[str, str | None]] = []

    def compile_source(source: str):
        bounds = {name: minimum for _, minimum, name in BOUNDS.findall(source)}
        compiles.append(bounds)
        resources = {n: SimpleNamespace(spills=m not in (None, "", "1")) for n, m in bounds.items()}
        return SimpleNamespace(resources=resources)

    lowered, compiled, split = compile_fitting(module, compile_source)
    capped = [n for n, m in compiles[0].items() if m not in (None, "", "1")]
    assert capped, compiles[0]  # the cost model capped a tile of this shape
    assert split == [] and len(compiles) == 2
    assert all(compiles[1][n] in ("", "1") for n in capped)
    assert not any(r.spills for r in compiled.resources.values())
