"""``deplodock bench`` without a GPU: the case registry, case selection, the report, the
no-GPU path, and the whole measuring path with the GPU simulated on the CPU (the kernel
interpreter stands in for the CUDA launches, a fake clock for the CUDA graphs).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from deplodock import bench, reference
from deplodock.backends.cuda import timing
from deplodock.backends.cuda.driver import gpu_available
from deplodock.backends.cuda.runtime import CompiledProgram
from deplodock.bench import CaseResult, geomean_speedups, results_json, write_report
from deplodock.bench_cases import GROUPS, Case, all_cases, select
from deplodock.cli import main
from deplodock.frontends.errors import UserInputError
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
            for seq in (128, 512):
                assert f"{kind}/{model}/S{seq}" in names
    assert "rmsnorm/large/4096x4096" in names
    assert len(cases) == 3 + 5 * 2 * 2 + 1 + 2  # seeds, 5 ops x 2 models x 2 seqs, large, long rows


def test_every_case_captures_lowers_and_compiles() -> None:
    """Each case lowers to the kernel level and compiles with NVRTC, and its declared
    minimum traffic is exactly its program's arguments read once plus its results
    written once (about 6 s for all of them)."""
    for case in all_cases():
        captured = case.build()
        module = import_program(captured.program).module
        func = next(iter(module.ops))
        args = sum(_bytes(a.shape, a.dtype) for a in graph_inputs(func))
        results = sum(
            math.prod(r.get_shape()) * 4 for r in func.function_type.outputs.data
        )  # every case is fp32
        assert args + results == case.traffic_bytes, case.name
        assert case.flops > 0 and case.flops_rule
        lower(module, to="kernel")
        program = CompiledProgram(module)
        assert program.kernels and program.compiled.cubin[:4] == b"\x7fELF", case.name


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
    assert len(names(["memory-bound"])) == 23
    assert names(["nothing-like-this"]) == []


def test_list(capsys) -> None:
    assert main(["bench", "--list", "--filter", "softmax/tinyllama"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["case", "group"]
    assert [line.split()[0] for line in out[1:]] == [
        "softmax/tinyllama/S128",
        "softmax/tinyllama/S512",
    ]
    assert "1x32x512x512" in out[2] and "67.1 MB" in out[2]


def test_no_match_is_a_user_error(capsys) -> None:
    assert main(["bench", "--filter", "nothing-like-this"]) == 1
    assert "no case matches nothing-like-this" in capsys.readouterr().err


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_no_gpu_compiles_then_exits_2(tmp_path, capsys) -> None:
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
    assert "| seed | 4.00× (2 cases) | 1.00× (2 cases) |" in md
    assert "| memory-bound | 1.00× (1 cases) | — (0 cases) |" in md
    row = next(line for line in md.splitlines() if line.startswith("| `seed/b`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # median 100 [p10 90, p90 130]; 1 GB in 100 µs = 10 TB/s = 235% of 4.25 TB/s
    assert cells[3:] == [
        "100.0 [90.0, 130.0]",
        "800.0 [720.0, 1040.0]",
        "200.0 [180.0, 260.0]",
        "8.00×",
        "2.00×",
        "10000",
        "235%",
        "1.0e-07",
    ]
    assert "| `seed/broken` | seed | 3 | **compile failed** |" in md
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
def simulated_gpu(monkeypatch):
    """A GPU made of the CPU: launches run the kernel-level program in the interpreter,
    CUDA graphs become a fake clock (deplodock 10 µs, eager 12, torch.compile 15)."""
    import deplodock.backends.cuda.driver as driver

    monkeypatch.setattr(driver, "gpu_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200 (simulated)")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch, "compile", lambda model, **kw: model)
    on_cpu = reference.fresh_inputs
    monkeypatch.setattr(
        reference, "fresh_inputs", lambda c, f, seed: on_cpu(c, f, seed, device="cpu")
    )
    state = {"corrupt": set(), "crash": set()}

    def launch(self, *inputs, poison=True):
        from deplodock.dialects.interpreters.run import run_forward

        outs = [torch.from_numpy(o) for o in run_forward(self.module, [t.numpy() for t in inputs])]
        if tuple(outs[0].shape) in state["crash"]:
            raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS (simulated)")
        if tuple(outs[0].shape) in state["corrupt"]:
            outs[0].view(-1)[0] = float("nan")  # an element no thread wrote
        return outs

    monkeypatch.setattr(CompiledProgram, "__call__", launch)
    calls = []

    def clock(candidates, rounds=30, calls_per_graph=20, **kw):
        calls.append((list(candidates), rounds))
        for fn in candidates.values():
            fn()
        per_call = {"deplodock": 10.0, "eager": 12.0, "torch.compile": 15.0, "copy": 500.0}
        return {n: timing.Timing(n, [per_call[n]] * rounds) for n in candidates}

    monkeypatch.setattr(timing, "time_graphs", clock)
    copy = {"bytes": 2 << 30, "rounds_us": [500.0], "bandwidth": (2 << 30) / 500e-6}
    monkeypatch.setattr(bench, "_measure_copy", lambda args: copy)
    state["timed"] = calls
    return state


CHEAP = "seed/rmsnorm,seed/add-matmul-relu,residual-add/tinyllama/S128,softmax/qwen2.5-7b/S128"


def test_simulated_gpu_run(simulated_gpu, tmp_path, capsys) -> None:
    out = tmp_path / "bench"
    assert main(["bench", "--filter", CHEAP, "--out", str(out), "--rounds", "4"]) == 0
    printed = capsys.readouterr().out
    assert "device-to-device copy: 4.29 TB/s" in printed  # 2 GiB per 500 µs
    assert printed.count(": ok, max rel err") == 4
    assert "geomean overall: 1.20× vs eager (4), 1.50× vs torch.compile (4)" in printed
    # each case: all three candidates, the requested rounds
    assert simulated_gpu["timed"] == [(["deplodock", "eager", "torch.compile"], 4)] * 4
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
