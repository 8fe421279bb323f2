"""``deplodock bench`` without a GPU: the case registry, case selection, the report, the
no-GPU path, and the whole measuring path with the GPU simulated on the CPU (the kernel
interpreter stands in for the CUDA launches, a fake clock for the CUDA graphs).
"""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pytest
import torch

from deplodock import bench, reference
from deplodock.backends.cuda import timing
from deplodock.backends.cuda.driver import gpu_available
from deplodock.backends.cuda.runtime import CompiledProgram
from deplodock.bench import CaseResult, geomean_speedups, plan_timing, results_json, write_report
from deplodock.bench import cases as bench_cases
from deplodock.bench.cases import GROUPS, SHAPE_SIZES, Case, all_cases, select
from deplodock.cli import main
from deplodock.errors import UserInputError
from deplodock.frontends.export import graph_inputs, import_program
from deplodock.pipeline import lower


def _bytes(shape, dtype) -> int:
    return math.prod(shape) * torch.empty((), dtype=dtype).element_size()


# ------------------------------------------------------------------ the registry


def test_registry_names_groups_and_sizes() -> None:
    cases = all_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names))
    assert {c.group for c in cases} <= set(GROUPS)
    assert names[:3] == ["seed/rmsnorm", "seed/softmax", "seed/add-matmul-relu"]
    for kind in ("rmsnorm", "silu-mul", "softmax", "rope", "residual-add"):
        for model in ("tinyllama", "qwen2.5-7b"):
            for seq in (32, 128, 512):
                assert f"{kind}/{model}/S{seq}" in names
    assert "rmsnorm/large/4096x4096" in names
    for model in ("tinyllama", "qwen2.5-7b"):
        for seq in (32, 128, 512):
            for kind in ("q", "kv", "o", "gate-up", "down"):
                assert f"proj/{kind}/{model}/S{seq}" in names
        for seq in (32, 128, 512):
            assert f"mlp/gated/{model}/S{seq}" in names
            assert f"mlp/down-residual/{model}/S{seq}" in names
        for seq in (128, 512):
            assert f"layer/{model}/S{seq}" in names
        for seq in (32, 128, 512):
            assert f"attention/{model}/S{seq}" in names
    assert "model/tinyllama/S128" in names and "model/qwen2.5-7b/S128" in names
    assert [n for n in names if n.startswith("square/")] == [
        "square/1024",
        "square/2048",
        "square/4096",
    ]
    counts = {g: sum(c.group == g for c in cases) for g in GROUPS}
    # seeds; 5 ops x 2 models x 3 seqs, large, long rows, sum; 5 projections x 2 models
    # x 3 seqs, 2 MLP kinds x 2 models x 3 seqs, 3 squares; 2 models x 3 seqs; 2 models
    # x 2 seqs; each model whole at S = 128
    assert counts == {
        "seed": 3,
        "memory-bound": 5 * 2 * 3 + 3,
        "matmul": 30 + 12 + 3,
        "attention": 6,
        "attention-shapes": 6,
        "shapes": len(SHAPE_SIZES),
        "block": 4,
        "model": 2,
    }
    assert len(cases) == sum(counts.values())
    assert list(dict.fromkeys(c.group for c in cases)) == list(GROUPS)  # grouped, in order
    for c in cases:
        want = {"matmul": 1e-4, "attention": 1e-4, "block": 2e-3, "model": 5e-3}
        want["attention-shapes"] = 1e-4
        if c.group == "shapes":  # matmuls and long reductions 1e-4, the others 1e-5
            assert c.rtol in (1e-4, 1e-5), c.name
            continue
        want = want.get(c.group, 1e-5)
        assert c.rtol == want, c.name


def _check_traffic_and_compile(case: Case, compile: bool = True):
    """The case's declared minimum traffic is exactly its program's arguments read once
    plus its results written once; it lowers to the kernel level and compiles with
    NVRTC. Returns the captured case."""
    captured = case.build()
    module = import_program(captured.program).module
    func = next(iter(module.ops))
    args = sum(_bytes(a.shape, a.dtype) for a in graph_inputs(func))
    results = sum(
        math.prod(r.get_shape()) * 4 for r in func.function_type.outputs.data
    )  # every case is fp32
    assert args + results == case.traffic_bytes, case.name
    assert case.flops > 0 and case.flops_rule
    if compile:
        lower(module, to="kernel")
        program = CompiledProgram(module)
        assert program.kernels and program.compiled.cubin[:4] == b"\x7fELF", case.name
    return captured


# Matmul cases compiled by the test below; the others are captured and their figures
# checked, not compiled (lowering and NVRTC cost about 0.5 s a case with a cold kernel
# cache). `deplodock bench --filter matmul --no-gpu-ok` compiles every one of them.
COMPILED_MATMULS = {
    "proj/q/qwen2.5-7b/S32",  # a bias, few rows
    "proj/kv/tinyllama/S128",  # a narrow N
    "proj/gate-up/tinyllama/S512",
    "proj/down/qwen2.5-7b/S512",  # the longest K, the largest projection
    "mlp/gated/tinyllama/S128",  # two matmuls and an epilogue
    "mlp/down-residual/qwen2.5-7b/S128",
    "square/1024",
}


def test_every_case_captures_lowers_and_compiles() -> None:
    """Every case but the decoder layers and the whole model (below): its traffic
    figure, the FLOPs of the matmuls and attention, and (but for the matmuls not in
    COMPILED_MATMULS) compilation to a cubin: about 6 s for the 26 elementwise and
    reduction cases, 1 s to capture the 41 matmuls (zeros for weights, export traces on
    fake tensors), 3 s to compile 7, 3 s for the 6 attention cases."""
    assert COMPILED_MATMULS <= {c.name for c in select(["matmul"])}
    for case in all_cases():
        if case.group in ("block", "model", "shapes"):  # shapes: test_shapes_group.py
            continue
        compile = case.group != "matmul" or case.name in COMPILED_MATMULS
        captured = _check_traffic_and_compile(case, compile)
        if case.group == "matmul":
            _check_matmul_flops(case, captured.program)
        if case.group == "attention":
            assert case.flops == _matmul_flops(captured.program), case.name


def _matmul_flops(program) -> int:
    """2·M·N·K of every matmul in the captured program (linear, mm, matmul, addmm, bmm,
    and scaled_dot_product_attention's two), from the shapes torch.export recorded."""
    total = 0
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        name = str(node.target)
        shape = lambda arg: tuple(arg.meta["val"].shape)  # noqa: E731
        if any(f"aten.{op}." in name for op in ("linear", "mm", "matmul", "addmm", "bmm")):
            x = node.args[1] if "addmm" in name else node.args[0]
            total += 2 * math.prod(tuple(node.meta["val"].shape)) * shape(x)[-1]
        elif "scaled_dot_product_attention" in name:
            q, k, v = (shape(a) for a in node.args[:3])
            total += 2 * math.prod(q[:-1]) * k[-2] * (q[-1] + v[-1])  # q·kᵀ, then p·v
    return total


def _check_matmul_flops(case: Case, program) -> None:
    """A matmul case's FLOPs: 2·M·N·K of its program's matmuls, plus its epilogue
    (bias, residual: 1 per output; silu and the gating multiply: 5 per output)."""
    (result,) = next(n for n in program.graph.nodes if n.op == "output").args[0]
    out = math.prod(result.meta["val"].shape)
    kind = case.name.split("/")[1]
    per_output = {"gated": 5, "down-residual": 1}.get(kind, 0)
    if kind in ("q", "kv") and "qwen" in case.name:
        per_output = 1  # Qwen2's q/k/v bias
    assert _matmul_flops(program) > 0, case.name
    assert case.flops == _matmul_flops(program) + per_output * out, case.name
    assert ("per output" in case.flops_rule) == bool(per_output), case.name


def test_decoder_layer_cases() -> None:
    """The block group at S = 128: traffic, and FLOPs = the projections' and attention's
    matmuls (about 4 s: building the layers; the S = 512 cases differ only in S, and
    test_models and test_real_kernels_compile compile decoder layers)."""
    pytest.importorskip("transformers")
    for case in select(["layer/*/S128"]):
        captured = _check_traffic_and_compile(case, compile=False)
        assert case.flops == _matmul_flops(captured.program), case.name


def test_whole_model_case() -> None:
    """The model group without capturing the whole model (4.4 GB of weights, and about
    30 s to compile; ``deplodock bench --filter model --no-gpu-ok`` compiles it): its
    figures are ``model_figures`` at all 22 layers, and ``model_figures`` at 2 layers
    is what a 2-layer TinyLlama captured on the meta device reads, writes and multiplies
    (the layers repeat, so the count per layer carries over)."""
    pytest.importorskip("transformers")
    from deplodock.frontends.models import capture_model

    (case,) = select(["model/tinyllama/S128"])
    assert case.rtol == 5e-3
    assert (case.traffic_bytes, case.flops) == bench_cases.model_figures("tinyllama", 128)
    assert "22 layers" in case.shape and "22 layers" in case.flops_rule
    captured = capture_model("tinyllama", part="model", seq=128, layers=2, device="meta")
    func = next(iter(import_program(captured.program).module.ops))
    args = sum(_bytes(a.shape, a.dtype) for a in graph_inputs(func))
    assert [a.dtype for a in graph_inputs(func) if a.kind == "input"] == [torch.int64]
    results = sum(math.prod(r.get_shape()) * 4 for r in func.function_type.outputs.data)
    traffic, flops = bench_cases.model_figures("tinyllama", 128, layers=2)
    assert args + results == traffic
    assert flops == _matmul_flops(captured.program)


def test_attention_is_causal_gqa() -> None:
    """The attention case computes causal attention with each kv head shared by
    heads / kv_heads query heads, as transformers expands them (repeat_interleave)."""
    (case,) = select(["attention/tinyllama/S32"])
    module = case.build().module
    q, k, v = torch.randn(1, 32, 32, 64), torch.randn(1, 4, 32, 64), torch.randn(1, 4, 32, 64)
    k8, v8 = k.repeat_interleave(8, dim=1), v.repeat_interleave(8, dim=1)
    scores = q @ k8.transpose(-1, -2) / 8.0
    scores = scores.masked_fill(torch.ones(32, 32, dtype=torch.bool).triu(1), float("-inf"))
    want = torch.softmax(scores, dim=-1) @ v8
    torch.testing.assert_close(module(q, k, v), want, rtol=1e-5, atol=1e-5)


def test_rope_matches_transformers_formula() -> None:
    (case,) = select(["rope/tinyllama/S128"])
    module = case.build().module
    q, cos, sin = torch.randn(1, 32, 128, 64), torch.randn(1, 128, 64), torch.randn(1, 128, 64)
    rotated = torch.cat((-q[..., 32:], q[..., :32]), dim=-1)
    want = q * cos[:, None] + rotated * sin[:, None]
    torch.testing.assert_close(module(q, cos, sin), want)


def test_select() -> None:
    names = lambda patterns: [c.name for c in select(patterns)]  # noqa: E731
    assert names(None) == names([]) == [c.name for c in all_cases()]
    assert names(["seed"]) == ["seed/rmsnorm", "seed/softmax", "seed/add-matmul-relu"]
    assert names(["rmsnorm/*/S512"]) == ["rmsnorm/tinyllama/S512", "rmsnorm/qwen2.5-7b/S512"]
    assert names(["large"]) == ["rmsnorm/large/4096x4096"]
    both = names(["rope/qwen2.5-7b/S128,seed/softmax"])
    assert both == names(["seed/softmax", "rope/qwen2.5-7b/S128"])
    assert both == ["seed/softmax", "rope/qwen2.5-7b/S128"]  # registry order
    assert len(names(["memory-bound"])) == 33  # 5 kinds x 2 models x 3 lengths + 3 large
    matmul = names(["matmul"])  # the group alone, not also seed/add-matmul-relu
    assert len(matmul) == 45 and "seed/add-matmul-relu" not in matmul
    assert matmul[:2] == ["proj/q/tinyllama/S32", "proj/kv/tinyllama/S32"]
    assert names(["proj/*/qwen2.5-7b/S32"]) == [
        f"proj/{k}/qwen2.5-7b/S32" for k in ("q", "kv", "o", "gate-up", "down")
    ]
    assert names(["square"]) == ["square/1024", "square/2048", "square/4096"]
    assert names(["mlp/*/tinyllama/S512"]) == [
        "mlp/gated/tinyllama/S512",
        "mlp/down-residual/tinyllama/S512",
    ]
    assert names(["block"]) == [
        f"layer/{m}/S{s}" for m in ("tinyllama", "qwen2.5-7b") for s in (128, 512)
    ]
    assert names(["attention"]) == [
        f"attention/{m}/S{s}" for m in ("tinyllama", "qwen2.5-7b") for s in (32, 128, 512)
    ]
    assert names(["model"]) == ["model/tinyllama/S128", "model/qwen2.5-7b/S128"]
    assert names(["nothing-like-this"]) == []


def test_list(capsys) -> None:
    assert main(["bench", "--list", "--filter", "softmax/tinyllama"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["case", "group"]
    assert [line.split()[0] for line in out[1:]] == [
        "softmax/tinyllama/S32",
        "softmax/tinyllama/S128",
        "softmax/tinyllama/S512",
    ]
    assert "1x32x512x512" in out[3] and "67.1 MB" in out[3]
    assert main(["bench", "--list", "--filter", "matmul"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert len(rows) == 45 and all(row.split()[1] == "matmul" for row in rows)
    q = next(row for row in rows if row.startswith("proj/q/qwen2.5-7b/S128 "))
    # x 128x3584 + W 3584² + b 3584 + out 128x3584, fp32; 2·128·3584² + 128·3584 FLOPs
    assert "55.1 MB" in q and "3288.8" in q and "W 3584x3584 + b 3584" in q


def test_no_match_is_a_user_error(capsys) -> None:
    assert main(["bench", "--filter", "nothing-like-this"]) == 1
    assert "no case matches nothing-like-this" in capsys.readouterr().err


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_no_gpu_compiles_then_exits_2(tmp_path, capsys, restore_fp32_settings) -> None:
    out = tmp_path / "report"
    argv = ["bench", "--filter", "seed/add-matmul-relu,residual-add/*/S128", "--out", str(out)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "no CUDA GPU on this machine" in captured.err and "nothing was timed" in captured.err
    assert "compiled 3 of 3 cases" in captured.err
    assert captured.out.count(": compiled (1 kernel") == 3
    assert not out.exists()  # no report of numbers that were never measured
    assert main([*argv, "--no-gpu-ok"]) == 0


# -------------------------------------------------------------------- the report


def _result(name, group, ours, eager, compiled, traffic=10**9) -> CaseResult:
    r = CaseResult(name, group, "1x2", traffic, 1, status="ok", max_rel_err=1e-7)
    rounds = lambda m: [m * f for f in (0.9, 1.0, 1.0, 1.1, 1.3)]  # noqa: E731
    r.timings = {"deplodock": rounds(ours), "eager": rounds(eager)}
    if compiled is not None:
        r.timings["torch.compile"] = rounds(compiled)
    return r


def _synthetic() -> list[CaseResult]:
    failed = CaseResult("seed/broken", "seed", "3", 12, 3, status="compile failed")
    failed.error = "cannot import the captured program (1 problem):\n  aten.foo | bar"
    mismatch = CaseResult("x/mismatch", "memory-bound", "3", 12, 3, status="mismatch")
    mismatch.max_rel_err = float("inf")
    mismatch.error = "max rel err inf > rtol 1e-05; not timed"
    return [
        _result("seed/a", "seed", 100.0, 200.0, 50.0),  # 2× eager, 0.5× torch.compile
        _result("seed/b", "seed", 100.0, 800.0, 200.0),  # 8×, 2×
        failed,
        _result("m/c", "memory-bound", 1000.0, 1000.0, None),  # 1×, torch.compile failed
        mismatch,
    ]


ENV = {
    "date": "2026-12-01 10:00 UTC",
    "gpu": "NVIDIA H200",
    "torch": "2.11.0+cu130",
    "cuda": "13.0",
    "nvrtc": "13.0",
    "python": "3.12.3",
    "command": "deplodock bench --out /tmp/x",
    "commit": "0123abc",
    "rounds": 5,
    "calls": 20,
    "rtol": 1e-5,
    "seed": 7,
    "pdl": True,
    "copy": {"bytes": 2 << 30, "rounds_us": [500.0], "bandwidth": 4.0e12},
}


def test_geomeans() -> None:
    g = geomean_speedups(_synthetic())
    assert list(g) == ["overall", "seed", "memory-bound"]
    assert g["seed"]["eager"] == {"geomean": pytest.approx(4.0), "cases": 2}
    assert g["seed"]["torch.compile"] == {"geomean": pytest.approx(1.0), "cases": 2}
    assert g["overall"]["eager"] == {"geomean": pytest.approx(16 ** (1 / 3)), "cases": 3}
    assert g["overall"]["torch.compile"]["cases"] == 2
    assert g["memory-bound"]["torch.compile"] == {"geomean": None, "cases": 0}
    assert g["memory-bound"]["eager"]["geomean"] == pytest.approx(1.0)


def test_report_markdown_and_json(tmp_path) -> None:
    paths = write_report(_synthetic(), ENV, tmp_path)
    md = paths["md"].read_text()
    assert "NVIDIA H200" in md and "`deplodock bench --out /tmp/x`" in md and "0123abc" in md
    assert "H200_COPY_BANDWIDTH" in md and "4.00 TB/s" in md
    assert "- deplodock's launches: programmatic dependent launch on (sm_90 and later)" in md
    assert "| seed | 4.00× (2 cases) | 1.00× (2 cases) |" in md
    assert "| memory-bound | 1.00× (1 cases) | — (0 cases) |" in md
    assert "### seed" in md and "### memory-bound" in md and "### matmul" not in md
    assert "| vs eager | vs torch.compile | GB/s | % copy BW |" in md
    row = next(line for line in md.splitlines() if line.startswith("| `seed/b`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # median 100 [p10 90, p90 130]; 1 GB in 100 µs = 10 TB/s = 235% of 4.25 TB/s; its
    # roofline is 1 GB at 4.25 TB/s: 235.3 µs
    assert cells[2:] == [
        "235.3",
        "100.0 [90.0, 130.0]",
        "800.0 [720.0, 1040.0]",
        "200.0 [180.0, 260.0]",
        "8.00×",
        "2.00×",
        "10000",
        "235%",
        "235%",
        "1.0e-07",
    ]
    assert "| `seed/broken` | 3 | 0.0 | **compile failed** |" in md
    assert "aten.foo \\| bar" in md  # a pipe in a message cannot break the table
    assert "## Failures" in md and "`x/mismatch`: mismatch" in md

    data = json.loads(paths["json"].read_text())  # strict JSON: inf became a string
    assert data["geomean_speedup"]["seed"]["eager"]["geomean"] == pytest.approx(4.0)
    assert data["environment"]["seed"] == 7
    by_name = {c["name"]: c for c in data["cases"]}
    assert by_name["seed/b"]["timings"]["eager"] == pytest.approx([720, 800, 800, 880, 1040])
    assert by_name["seed/b"]["summary"]["deplodock"] == {
        "median_us": 100.0,
        "p10_us": 90.0,
        "p90_us": 130.0,
    }
    assert by_name["seed/b"]["bandwidth_Bps"] == pytest.approx(1e13)
    assert by_name["x/mismatch"]["max_rel_err"] == "inf"
    assert data["copy_bandwidth"]["reference_Bps"] == 4.25e12
    if paths["png"] is None:
        assert "results.png not written" in md
    else:
        assert paths["png"].read_bytes()[:4] == b"\x89PNG"


def test_report_matmul_group(tmp_path) -> None:
    """The matmul group: eager labelled cuBLAS, TFLOP/s against the fp32 GEMM ceiling,
    its own geomean row, its tolerance, the fp32 settings and the measured GEMM."""
    mm = _result("square/1024", "matmul", 200.0, 50.0, 60.0)
    mm.flops, mm.rtol = 2 * 1024**3, 1e-4  # 2.15 GFLOP in 200 µs: 10.7 TFLOP/s
    mm.notes.append("timed with 5 calls per graph and 30 rounds")
    seed = _result("seed/a", "seed", 100.0, 200.0, 50.0)
    seed.rtol = 1e-5
    fp32 = {"torch.backends.cuda.matmul.allow_tf32": False, "float32_matmul_precision": "highest"}
    gemm = {"n": 4096, "flops": 2 * 4096**3, "rounds_us": [2800.0], "flop_rate": 49.1e12}
    env = {**ENV, "rtol": None, "budget": 2.0, "fp32": fp32, "gemm": gemm}
    paths = write_report([seed, mm], env, tmp_path)
    md = paths["md"].read_text()
    assert "| matmul (eager: cuBLAS) | 0.25× (1 cases) | 0.30× (1 cases) |" in md
    assert "| seed | 2.00× (1 cases) |" in md
    assert "### matmul" in md
    assert "| cuBLAS (eager) µs | torch.compile µs | vs cuBLAS (eager) | vs torch.compile " in md
    assert "| TFLOP/s | % fp32 GEMM | % roofline | max rel err |" in md
    row = next(line for line in md.splitlines() if line.startswith("| `square/1024`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[6:10] == ["0.25×", "0.30×", "10.7", "21%"]  # of H200_FP32_GEMM, 51 TFLOP/s
    # the roofline: the longer of its 2.15 GFLOP at 51 TFLOP/s (42 µs) and its synthetic
    # 1 GB at 4.25 TB/s (235 µs)
    assert (cells[2], cells[10]) == ("235.3", "118%")
    assert "tolerance 1e-05 (seed), 0.0001 (matmul)" in md
    assert "torch.backends.cuda.matmul.allow_tf32 = False" in md
    assert "H200_FP32_GEMM" in md and "49.1 TFLOP/s" in md
    assert "fewer for a case whose timing would pass 2 s" in md
    assert "`square/1024`: timed with 5 calls per graph" in md
    data = json.loads(paths["json"].read_text())
    row = data["cases"][1]
    assert row["flop_rate"]["deplodock"] == pytest.approx(2 * 1024**3 / 200e-6)
    assert row["flop_rate"]["eager"] == pytest.approx(2 * 1024**3 / 50e-6)
    assert row["gemm_fraction"] == pytest.approx(2 * 1024**3 / 200e-6 / 51e12)
    assert data["fp32_gemm"]["reference_flop_rate"] == 51e12
    assert data["environment"]["fp32"] == fp32
    # off the H200 the GEMM measured in the run is the ceiling; without it, none
    a100 = {**env, "gpu": "NVIDIA A100"}
    assert bench.reference_flops(a100)[0] == 49.1e12
    assert bench.reference_flops({**a100, "gemm": None})[0] is None
    md = bench.format_markdown([mm], {**a100, "gemm": None, "rtol": 3e-4})
    assert "| 10.7 | — | — |" in md and "tolerance 0.0003 (--rtol, every case)" in md


def test_plan_timing() -> None:
    # cheap: the requested rounds and calls (30 · 20 · 37 µs = 22 ms of GPU time)
    assert plan_timing({"d": 10.0, "e": 12.0, "c": 15.0}, 30, 20, 2.0) == (30, 20)
    # a 4 ms kernel against 1.4 ms cuBLAS: 30 · 20 · 6.8 ms = 4 s; 9 calls fit in 2 s
    assert plan_timing({"d": 4000.0, "e": 1400.0, "c": 1400.0}, 30, 20, 2.0) == (30, 9)
    # 46 ms against 2.8 ms: one call per graph (the fastest graph still ≥ 1 ms), 30 rounds
    assert plan_timing({"d": 46000.0, "e": 2800.0, "c": 2800.0}, 30, 20, 2.0) == (30, 1)
    # a fast baseline keeps enough calls that its graph lasts 1 ms; then fewer rounds
    assert plan_timing({"d": 100000.0, "e": 250.0}, 30, 20, 2.0) == (10, 4)
    assert plan_timing({"d": 20000.0, "e": 250.0}, 30, 20, 2.0) == (24, 4)
    # never more than asked, and --budget 0 turns it off
    assert plan_timing({"d": 46000.0}, 5, 3, 2.0) == (5, 3)  # 0.7 s
    assert plan_timing({"d": 46000.0}, 30, 3, 2.0) == (30, 1)
    assert plan_timing({"d": 46000.0}, 30, 20, 0) == (30, 20)
    assert plan_timing({"d": 1e9}, 3, 20, 2.0) == (3, 1)


def _allow_tf32(value: bool) -> None:
    """TF32 allowed or not in cuBLAS and cuDNN, also where torch.testing's harness (OpInfo,
    run earlier on the same worker) froze the cuDNN flags (as ``bench.strict_fp32``)."""
    torch.backends.cuda.matmul.allow_tf32 = value
    unfrozen = getattr(torch.backends, "__allow_nonbracketed_mutation", contextlib.nullcontext)
    with unfrozen():
        torch.backends.cudnn.allow_tf32 = value


@pytest.fixture
def restore_fp32_settings():
    """torch's TF32 settings as they were before the test (strict_fp32 changes them)."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    precision = torch.get_float32_matmul_precision()
    yield
    _allow_tf32(cudnn)
    torch.backends.cuda.matmul.allow_tf32 = matmul
    torch.set_float32_matmul_precision(precision)


def test_strict_fp32(restore_fp32_settings) -> None:
    _allow_tf32(True)
    torch.set_float32_matmul_precision("high")
    settings = bench.strict_fp32()
    assert not torch.backends.cuda.matmul.allow_tf32
    assert not torch.backends.cudnn.allow_tf32
    assert torch.get_float32_matmul_precision() == "highest"
    assert settings == {
        "torch.backends.cuda.matmul.allow_tf32": False,
        "torch.backends.cudnn.allow_tf32": False,
        "float32_matmul_precision": "highest",
    }


def test_partial_report(tmp_path) -> None:
    paths = write_report(_synthetic()[:2], ENV, tmp_path, partial="2 of 5")
    assert paths["png"] is None and not (tmp_path / "results.png").exists()
    md = paths["md"].read_text()
    assert "**Partial report: 2 of 5 cases so far; the run did not finish.**" in md
    assert "partial" in json.loads(paths["json"].read_text())["environment"]


def test_copy_reference_off_the_h200() -> None:
    env = {**ENV, "gpu": "NVIDIA A100"}
    assert bench.reference_bandwidth(env)[0] == 4.0e12  # the copy measured in the run
    assert bench.reference_bandwidth({**env, "copy": None})[0] is None
    data = results_json(_synthetic(), {**env, "copy": None})
    assert all(c["copy_fraction"] is None for c in data["cases"])


def test_stats_match_timing() -> None:
    rounds = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 7.0, 8.0, 6.0, 10.0, 11.0, 0.5]
    t = timing.Timing("x", rounds)
    assert bench._stats(rounds) == (t.median_us, *t.spread_us)


# ---------------------------------------------------- the GPU path, simulated


@pytest.fixture
def simulated_gpu(monkeypatch, restore_fp32_settings):
    """A GPU made of the CPU: launches run the kernel-level program in the interpreter,
    CUDA graphs become a fake clock (deplodock 10 µs, eager 12, torch.compile 15, unless
    the test sets ``state["per_call"]``), which also gives the cost estimates."""
    import deplodock.backends.cuda.driver as driver

    monkeypatch.setattr(driver, "gpu_available", lambda: True)
    monkeypatch.setattr(driver, "current_arch", lambda device=None: "sm_90")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200 (simulated)")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch, "compile", lambda model, **kw: model)
    on_cpu = reference.fresh_inputs
    monkeypatch.setattr(
        reference, "fresh_inputs", lambda c, f, seed: on_cpu(c, f, seed, device="cpu")
    )
    per_call = {"deplodock": 10.0, "eager": 12.0, "torch.compile": 15.0, "copy": 500.0}
    state = {"corrupt": set(), "crash": set(), "per_call": per_call}

    def launch(self, *inputs, poison=True):
        from deplodock.dialects.interpreters.run import run_forward

        outs = [torch.from_numpy(o) for o in run_forward(self.module, [t.numpy() for t in inputs])]
        if tuple(outs[0].shape) in state["crash"]:
            raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)")
        if tuple(outs[0].shape) in state["corrupt"]:
            outs[0].view(-1)[0] = float("nan")  # an element no thread wrote
        return outs

    monkeypatch.setattr(CompiledProgram, "__call__", launch)

    def clock(candidates, rounds=30, calls=20):
        timed.append((list(candidates), rounds, calls))
        for fn in candidates.values():
            fn()
        return {n: timing.Timing(n, [state["per_call"][n]] * rounds) for n in candidates}

    timed = []
    monkeypatch.setattr(timing, "time_graphs", clock)
    estimate = lambda candidates: {n: state["per_call"][n] for n in candidates}  # noqa: E731
    monkeypatch.setattr(bench, "_estimate_us", estimate)
    copy = {"bytes": 2 << 30, "rounds_us": [500.0], "bandwidth": (2 << 30) / 500e-6}
    monkeypatch.setattr(bench, "_measure_copy", lambda args: copy)
    gemm = {"n": 4096, "flops": 2 * 4096**3, "rounds_us": [2800.0], "flop_rate": 49.1e12}
    monkeypatch.setattr(bench, "_measure_gemm", lambda args: gemm)
    state["timed"] = timed
    return state


CHEAP = "seed/rmsnorm,seed/add-matmul-relu,residual-add/tinyllama/S128,softmax/qwen2.5-7b/S128"


def test_simulated_gpu_run(simulated_gpu, tmp_path, capsys) -> None:
    out = tmp_path / "bench"
    assert main(["bench", "--filter", CHEAP, "--out", str(out), "--rounds", "4"]) == 0
    printed = capsys.readouterr().out
    assert "device-to-device copy: 4.29 TB/s" in printed  # 2 GiB per 500 µs
    assert printed.count(": ok, max rel err") == 4
    assert "fp32 GEMM" not in printed  # no matmul case, no GEMM ceiling measured
    assert "geomean overall: 1.20× vs eager (4), 1.50× vs torch.compile (4)" in printed
    # each case: all three candidates, the requested rounds, the default calls
    assert simulated_gpu["timed"] == [(["deplodock", "eager", "torch.compile"], 4, 20)] * 4
    data = json.loads((out / "results.json").read_text())
    assert [c["status"] for c in data["cases"]] == ["ok"] * 4
    for case in data["cases"]:
        assert case["max_rel_err"] < 1e-5  # the interpreter's result against eager
        assert case["kernels"][0]["registers"] > 0
        assert case["seed"] is not None
    assert data["environment"]["command"].startswith("deplodock bench --filter")
    md = (out / "results.md").read_text()
    assert "NVIDIA H200 (simulated)" in md and "Partial" not in md
    assert "partial" not in data["environment"]
    assert data["environment"]["fp32"]["torch.backends.cuda.matmul.allow_tf32"] is False
    assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32


def test_simulated_gpu_matmul(simulated_gpu, monkeypatch, tmp_path, capsys) -> None:
    """A small projection through the matmul group's path: TF32 off before anything,
    the fp32 GEMM measured, its tolerance, TFLOP/s, fewer calls for a slow case."""
    _allow_tf32(True)
    small = bench_cases._projection("small", "q", 4, 8, 16, True)  # proj/q/small/S4
    assert small.flops == 2 * 4 * 8 * 16 + 4 * 8 and small.rtol == 1e-4
    monkeypatch.setattr(bench, "select", lambda patterns: [small])
    # deplodock at 4 ms a call: 30 rounds of 20 calls would be 2.9 s; 13 calls fit in 2 s
    simulated_gpu["per_call"].update({"deplodock": 4000.0, "eager": 400.0})
    simulated_gpu["per_call"]["torch.compile"] = 450.0
    out = tmp_path / "bench"
    assert main(["bench", "--out", str(out), "--no-copy"]) == 0
    printed = capsys.readouterr().out
    assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    assert "fp32 GEMM (4096³): 49.1 TFLOP/s" in printed
    assert "proj/q/small/S4: ok" in printed and "TFLOP/s (0% of fp32 GEMM)" in printed
    assert simulated_gpu["timed"] == [(["deplodock", "eager", "torch.compile"], 30, 13)]
    data = json.loads((out / "results.json").read_text())
    (case,) = data["cases"]
    assert case["rtol"] == 1e-4 and case["max_rel_err"] < 1e-4
    assert (case["rounds"], case["calls"]) == (30, 13)
    assert case["flop_rate"]["eager"] == pytest.approx(small.flops / 400e-6)
    assert data["environment"]["gemm"]["flop_rate"] == 49.1e12
    md = (out / "results.md").read_text()
    assert "### matmul" in md and "cuBLAS (eager) µs" in md
    assert "timed with 13 calls per graph and 30 rounds (about 4000 µs a call" in md


def test_simulated_gpu_failures_are_reported_and_skipped(
    simulated_gpu, monkeypatch, tmp_path, capsys
) -> None:
    def broken():
        raise UserInputError("cannot import the captured program: aten.bogus")

    bad = Case("seed/bogus", "seed", "1", broken, 8, 1, "made up")
    cases = [bad, *select(["seed/rmsnorm,seed/add-matmul-relu,residual-add/tinyllama/S128"])]
    monkeypatch.setattr(bench, "select", lambda patterns: cases)
    simulated_gpu["corrupt"].add((1, 32, 2048))  # seed/rmsnorm's output
    simulated_gpu["crash"].add((16, 16))  # seed/add-matmul-relu's
    out = tmp_path / "bench"
    assert main(["bench", "--out", str(out), "--rounds", "3", "--no-copy"]) == 1
    printed = capsys.readouterr().out
    assert "seed/bogus: compile failed: cannot import the captured program" in printed
    assert "seed/rmsnorm: mismatch: max rel err inf" in printed
    assert "seed/add-matmul-relu: error: RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS" in printed
    assert "residual-add/tinyllama/S128: ok" in printed
    assert "3 of 4 cases failed: seed/bogus, seed/rmsnorm, seed/add-matmul-relu" in printed
    assert len(simulated_gpu["timed"]) == 1  # only the good case was timed
    assert "device-to-device copy" not in printed  # --no-copy
    data = json.loads((out / "results.json").read_text())
    assert [c["status"] for c in data["cases"]] == ["compile failed", "mismatch", "error", "ok"]
    assert data["cases"][1]["timings"] == {}
    assert data["cases"][1]["outputs"][0]["max_rel"] == "inf"


def test_fresh_inputs_redraw_parameters() -> None:
    (case,) = select(["seed/rmsnorm"])
    captured = case.build()
    module = import_program(captured.program).module
    func = next(iter(module.ops))
    args, users, ref = reference.fresh_inputs(captured, func, 3, device="cpu")
    weight = captured.module.weight
    assert not torch.equal(weight, torch.ones_like(weight))  # RMSNorm's default redrawn
    assert len(users) == 1 and not torch.equal(users[0], captured.example_inputs[0])
    assert any(a is weight or torch.equal(a, weight.detach()) for a in args)
    np.testing.assert_allclose(ref()[0].numpy(), captured.module(users[0]).detach().numpy())


# --- the schedule sweep (deplodock.bench.sweep) ------------------------------------------


def test_sweep_variant_is_built_as_labelled_and_correct() -> None:
    """A variant's options reach the schedule: the block of 16 x 16 threads, the K split,
    one copy of each slab, the cap; and the kernels it builds compute the product."""
    from xdsl.parser import Parser

    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.bench.sweep import Shape, Variant, build, variants
    from deplodock.dialects import kernel, make_context, tile
    from deplodock.dialects.interpreters.run import run_forward

    shape = Shape.parse("linear:64x64x256")
    found = {v.label for v in variants(shape, (1, 2), ("planned", "single"))}
    assert "64x64t256k16_S2_u16_sb" in found and "64x64t256k16_S1_u16_mx" in found
    variant = Variant((4, 4, 16, 16, 16), 2, 16, False, 3)
    _, _, text, compiled = build((shape, variant))
    module = Parser(make_context(), text).parse_module()
    kernels = [op for op in module.walk() if isinstance(op, kernel.KernelOp)]
    parts = next(k for k in kernels if k.sym_name.data.endswith("_chunks"))
    assert parts.block_shape == (256, 1, 1) and parts.grid_shape[0] == 2  # 2 K splits
    assert parts.min_blocks_per_sm == 3 and "__launch_bounds__(256, 3)" in emit_cuda(module)
    schedule = tile.schedule_of(parts)
    assert (schedule.thread_tile, schedule.block_threads) == ((4, 4), (16, 16))
    assert (schedule.k_chunk.data, schedule.splits.data, schedule.fill.data) == (16, 2, "sync")
    assert not any(r.spills for r in compiled.resources.values())
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 64, 256), np.float32), rng.standard_normal((64, 256), np.float32)
    (got,) = run_forward(module, [x, w])
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="linear:MxNxK"):
        Shape.parse("linear:64x64")


def test_sweep_pads_k_to_a_split_that_does_not_divide_it() -> None:
    """K = 400 in 3 splits: the sweep offers it (as the planner prices it, K padded with
    zeros to 3 x 144), and the build computes the product."""
    from xdsl.parser import Parser

    from deplodock.bench.sweep import Shape, build, variants
    from deplodock.dialects import kernel, make_context, tile
    from deplodock.dialects.interpreters.run import run_forward

    shape = Shape.parse("linear:64x64x400")
    found = {v.label: v for v in variants(shape, (1, 3), ("planned",))}
    assert "64x64t256k16_S3_u8_mx" in found and "64x64t256k16_S1_u8_mx" in found
    _, _, text, _ = build((shape, found["64x64t256k16_S3_u8_mx"]))
    module = Parser(make_context(), text).parse_module()
    kernels = [op for op in module.walk() if isinstance(op, kernel.KernelOp)]
    parts = next(k for k in kernels if k.sym_name.data.endswith("_chunks"))
    assert tile.schedule_of(parts).splits.data == 3 and parts.grid_shape[0] == 3
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 64, 400), np.float32), rng.standard_normal((64, 400), np.float32)
    (got,) = run_forward(module, [x, w])
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-4, atol=1e-4)


def test_sweep_builds_padded_and_whole_k_variants() -> None:
    """A batch of small products no tile divides: the sweep builds the small tiles padded
    (edge tiles, unsplit), with their own K chunk and with the whole K as one, beside the
    program as the compiler builds it (``planned``, no option); each computes the product."""
    from xdsl.parser import Parser

    from deplodock.bench.sweep import Shape, build, planned_label, variants
    from deplodock.dialects import kernel, make_context, tile
    from deplodock.dialects.interpreters.run import run_forward

    shape = Shape.parse("matmul:3x32x31x33")
    found = {v.label: v for v in variants(shape, (1, 2), ("planned", "single"))}
    assert {"32x32t64k33_S1_u8_mx", "32x32t64k16_S1_u8_sb", "16x16t64k33_S1_u33_mx"} <= set(found)
    assert not any("_S2" in label or label.startswith("128x") for label in found)
    assert planned_label(shape) == "16x16t64k33_S1_u8_mx"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 32, 33), np.float32)
    w = rng.standard_normal((3, 33, 31), np.float32)
    for variant in (found["32x32t64k33_S1_u8_mx"], found["32x32t64k16_S1_u8_sb"], None):
        _, _, text, compiled = build((shape, variant))
        module = Parser(make_context(), text).parse_module()
        (matmul,) = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
        block = (16, 16) if variant is None else (32, 32)
        assert tile.schedule_of(matmul).block_tile == block
        assert not any(r.spills for r in compiled.resources.values())
        (got,) = run_forward(module, [x, w])
        np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-4)


def test_sweep_check_finds_the_picked_variant(tmp_path, capsys) -> None:
    """``--check`` times the planner's pick by its own label: a sweep holding the 1-split
    and the 16-split build of one tile reports the 16-split one as picked when the planner
    picks 16 (``_S1`` is a prefix of ``_S16``, and the check once took it)."""
    import json

    from deplodock.bench.sweep import Shape, _same_build, check, planned_label

    shape = Shape.parse("linear:32x2048x5632")
    pick = planned_label(shape)
    assert pick is not None and "_S16" in pick
    one = pick.replace("_S16", "_S1")
    assert not _same_build(pick, one) and _same_build(pick, pick.split("_u")[0])
    data = {shape.name: {"cublas": 40.0, one: 200.0, pick: 30.0}}
    (tmp_path / "sweep.json").write_text(json.dumps(data))
    check([tmp_path / "sweep.json"])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(shape.name))
    assert f"picked {pick}" in line and "30.0 us" in line
    check([tmp_path / "sweep.json"], holdout=[tmp_path / "sweep.json"])  # reported apart
    out = capsys.readouterr().out
    assert out.count(f"picked {pick}") == 2 and "over 1 shapes (held out): 1.000" in out
    # a pick the sweep did not time is counted apart, not in the geomean
    (tmp_path / "other.json").write_text(json.dumps({shape.name: {"cublas": 40.0, one: 200.0}}))
    check([tmp_path / "sweep.json", tmp_path / "other.json"])
    out = capsys.readouterr().out
    assert "over 1 shapes: 1.000" in out and "picks no sweep timed: 1 of 2 shapes" in out


def test_fit_counts_a_pick_no_sweep_timed_as_its_slowest() -> None:
    """The fit's pick loss uses the planner's own pick; a pick no sweep of the shape timed
    costs as the slowest timed variant (not nothing), one timed in another sweep of the
    shape costs nothing here (that sweep judges it)."""
    from deplodock.bench.sweep import Shape, _measured, _picked_loss, planned_label

    shape = Shape.parse("linear:32x2048x5632")
    pick = planned_label(shape)
    other = pick.replace("_S16", "_S8")
    timed = {shape.name: {"cublas": 40.0, pick: 30.0, other: 60.0}}
    untimed = {shape.name: {"cublas": 40.0, other: 60.0, other.replace("_S8", "_S4"): 45.0}}
    assert _picked_loss(_measured(timed)) == pytest.approx(0.0)
    assert _picked_loss(_measured(untimed)) == pytest.approx(math.log(60.0 / 45.0))
    assert _picked_loss(_measured(untimed) + _measured(timed)) == pytest.approx(0.0)


def test_variants_tool_without_a_gpu_builds_and_says_so(capsys) -> None:
    """``bench.variants.compare`` on a machine with no GPU: each variant built and
    compiled, nothing timed, said in a line (not a traceback); an unknown case is named."""
    from deplodock.backends.cuda.driver import gpu_available
    from deplodock.bench.variants import compare

    if gpu_available():
        pytest.skip("a GPU is here: compare times")
    cases = {"double": (lambda x: x * 2, [lambda: torch.randn(64)])}
    compare(cases, lambda name: {"default": {}}, ["double"])
    out = capsys.readouterr().out
    assert "double default: built and compiled" in out and "nothing timed" in out
    with pytest.raises(SystemExit, match="unknown case.*halve"):
        compare(cases, lambda name: {"default": {}}, ["halve"])


def test_variants_tool_builds_each_variant_through_options() -> None:
    """``bench.variants.build``: the options reach the passes, the guard stays out of the
    way (a one-block sum forced by ``chunk-reduce{chunks=1}`` is kept, not replaced)."""
    from deplodock.bench.variants import _Fn, build
    from deplodock.passes.tile.chunk_reduce import ChunkReduce

    module, inputs = _Fn(lambda x: x.sum()), [torch.randn(1 << 20)]
    forced = build(module, inputs, {"chunk-reduce": ChunkReduce(chunks=1)})
    planned = build(module, inputs, {})
    assert [k.grid_shape[0] for k in forced.kernels] == [1]
    assert len(planned.kernels) == 2 and planned.kernels[0].grid_shape[0] > 1
