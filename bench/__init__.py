"""``deplodock bench``: every benchmark case, timed against PyTorch, in one report.

    deplodock bench                                   # all cases → bench-results/
    deplodock bench --filter rmsnorm --rounds 50      # a name piece, a glob or a group
    deplodock bench --list                            # the cases, with traffic and FLOPs
    deplodock bench --filter matmul                   # one group (issue 6's matmuls)

The cases are ``deplodock.bench.cases``. Per case, in one process and one run:

1. **compile**: capture with ``torch.export``, import, lower to the kernel level, emit
   CUDA and compile it with NVRTC (``CompiledProgram``). A failure is reported as the
   case's result and the run goes on.
2. **check**: fresh random inputs and re-drawn parameters on the GPU
   (``deplodock.reference``), deplodock's outputs poisoned with NaN before it runs,
   compared with PyTorch eager: max |got - want| / max |want| per output, tolerance the
   case's own (``bench.cases``: 1e-5 elementwise and reductions, 1e-4 matmuls and
   attention, 2e-3 decoder layers, 5e-3 the whole model's logits) unless ``--rtol`` sets
   one for all. A case that fails is reported and not timed.
3. **time**: ``time_graphs`` (CUDA graphs of ``--calls`` back-to-back calls, ``--rounds``
   rounds interleaved between deplodock, eager and torch.compile); the report gives the
   median and [p10, p90] of the per-call time. A slow case (a matmul far from cuBLAS
   takes milliseconds a call) is timed with fewer calls per graph, then fewer rounds, so
   that its timed GPU work stays within ``--budget`` seconds (``plan_timing``; one
   synchronised call of each candidate estimates the cost; the numbers used are in the
   case's notes and in results.json). torch.compile is the default mode, with
   ``dynamic=False`` and ``torch._dynamo.reset()`` before each case, so every case gets a
   kernel specialised to its shapes (otherwise dynamo's automatic dynamic shapes would
   recompile later cases of the same module class with symbolic sizes, and its
   recompile limit would stop compiling them at all).

**fp32 means fp32.** Before anything is measured, TF32 is switched off for cuBLAS and
cuDNN and the float32 matmul precision set to "highest" (``strict_fp32``), for eager and
torch.compile alike (inductor's default mode calls the same cuBLAS for a matmul): the
baseline of the matmul cases is cuBLAS's true fp32 GEMM, as issue 6 asks, and the
report's environment records the settings.

Achieved bandwidth is the case's minimum traffic (every input and parameter read once,
every output written once) over deplodock's median time, and is shown as a fraction of
the machine's copy bandwidth: ``H200_COPY_BANDWIDTH`` on an H200, otherwise the
device-to-device copy this run measures (``--no-copy`` skips that measurement). The
calls of a graph run back to back, so a case whose data fits in L2 (50 MB on the H200)
is measured warm and may exceed the copy bandwidth: that is the figure for a kernel that
runs right after its producer, not an HBM-bound one.

The compute-bound groups (``FLOP_GROUPS``: matmul, attention, attention-shapes, block,
model) are shown as achieved TFLOP/s (the case's FLOPs over deplodock's median) against
the fp32 GEMM ceiling:
``H200_FP32_GEMM`` on an H200, otherwise a 4096³ fp32 ``torch.mm`` this run measures
(measured whenever such a case is selected, and reported either way; ``--no-gemm`` skips
it). Their eager baseline is cuBLAS, and the report labels it so.

The report (``--out``, default ``bench-results/``): ``results.md`` (environment,
geomean speedups overall and per group, a table of cases per group, failures), ``results.json``
(every raw number, every round), ``results.png`` (speedup over torch.compile per case,
log scale) when matplotlib is installed. It is rewritten after every case, marked partial
and without the chart, so a run cut short keeps what it measured. Without a GPU every
selected case is still compiled with NVRTC; nothing is timed, no report is written, and
the exit status is 2 (0 with ``--no-gpu-ok``). Otherwise the exit status is 0 when every
case compiled, matched and was timed, 1 when any failed.

This module imports torch only where it measures, so the ``deplodock`` parser and the
report writer stay light.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deplodock.bench.cases import GROUPS, Case, select
from deplodock.boundary import EXIT_NO_GPU
from deplodock.errors import UserInputError

H200_COPY_BANDWIDTH = 4.25e12
"""Bytes per second (read + write counted) of a large device-to-device copy on the
project's H200, measured with CUDA graphs on 2026-11-29 (README, "Results": the seed
softmax's 221 µs floor for 2 × 470 MB). The yardstick for "% of copy bandwidth"."""

COPY_BYTES = 1 << 30  # the measured copy: 1 GiB read and 1 GiB written, far beyond L2

H200_FP32_GEMM = 51e12
"""FLOP/s of cuBLAS's fp32 GEMM (TF32 off) on the project's H200, about 51 TFLOP/s (the
SXM part's fp32 FMA peak is 67 TFLOP/s): the figure issue 6's matmul work is judged
against, as the issue's brief gives it, not yet re-measured by this bench. Every run
with a case of a FLOP group also measures a GEMM_N³ ``torch.mm`` and reports it beside
this figure, so a run on the H200 checks it. The yardstick for "% of fp32 GEMM"."""

GEMM_N = 4096  # the measured GEMM: a 4096 x 4096 by 4096 x 4096 fp32 torch.mm
# shown as TFLOP/s against the fp32 GEMM, not GB/s
FLOP_GROUPS = ("matmul", "attention", "attention-shapes", "block", "model")
CUBLAS_GROUPS = ("matmul",)  # whose eager baseline is a cuBLAS call (and the epilogue)

DEFAULT_BUDGET_S = 2.0  # timed GPU seconds per case, at most (see plan_timing)
MIN_GRAPH_US = 1000.0  # a graph of the fastest candidate lasts this long, at least
MIN_ROUNDS = 10  # rounds are cut down to this, no further
DEFAULT_OUT = "bench-results"
CANDIDATES = ("deplodock", "eager", "torch.compile")
BASELINES = ("eager", "torch.compile")

EXIT_FAILED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--filter",
        action="append",
        metavar="PATTERN",
        help="only cases whose group is PATTERN, whose name matches the glob PATTERN or "
        "contains it; comma-separated or repeated for several",
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"the report's folder (default {DEFAULT_OUT}/)"
    )
    parser.add_argument(
        "--rounds", type=int, default=30, help="timed rounds per case, at most (default 30)"
    )
    parser.add_argument(
        "--calls",
        type=int,
        default=20,
        help="calls per CUDA graph, per round, at most (default 20)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        metavar="SECONDS",
        help="timed GPU seconds per case: a slower case gets fewer calls per graph, then "
        f"fewer rounds (default {DEFAULT_BUDGET_S:g}; 0: always --calls and --rounds)",
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="max |got-want| / max |want| for every case (default: each case's own, "
        "1e-5 elementwise, 1e-4 matmul, 2e-3 decoder layers)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the random inputs")
    parser.add_argument(
        "--arch",
        "--target",
        dest="arch",
        default="sm_90",
        metavar="ARCH",
        help="CUDA architecture (default sm_90)",
    )
    parser.add_argument(
        "--no-copy",
        action="store_true",
        help="do not measure the device-to-device copy bandwidth in this run",
    )
    parser.add_argument(
        "--no-gemm",
        action="store_true",
        help=f"do not measure the fp32 GEMM ceiling ({GEMM_N}³ torch.mm) in this run",
    )
    parser.add_argument(
        "--no-gpu-ok",
        action="store_true",
        help="exit 0 rather than 2 when there is no GPU (compile only)",
    )
    parser.add_argument(
        "-p",
        "--pass-options",
        action="append",
        default=[],
        metavar="PASS{OPT=V}",
        help="override a pass's defaults, as `deplodock compile -p` does "
        "('mma-contract{precision=tf32x3}', repeatable): every case compiled so, the "
        "report says with what",
    )
    parser.add_argument(
        "--kernels",
        action="store_true",
        help="also profile each timed candidate kernel by kernel (torch.profiler: "
        "launches and GPU µs a call) and list its slowest kernels in the report",
    )


# ------------------------------------------------------------------- results


@dataclass
class CaseResult:
    """One case's outcome: what it is, how it compiled, its errors and its rounds."""

    name: str
    group: str
    shape: str
    traffic_bytes: int
    flops: int
    flops_rule: str = ""
    rtol: float | None = None  # the tolerance it was checked against
    status: str = "pending"  # ok | compiled (no GPU) | compile failed | mismatch | error
    error: str = ""
    compile_s: float = 0.0  # import, lowering and NVRTC (the capture not counted)
    kernels: list[dict[str, Any]] = field(default_factory=list)
    seed: int | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)  # per output: errors
    max_rel_err: float | None = None
    timings: dict[str, list[float]] = field(default_factory=dict)  # candidate → rounds, µs
    rounds: int | None = None  # the rounds and calls per graph it was timed with
    calls: int | None = None
    notes: list[str] = field(default_factory=list)
    profiles: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # --kernels

    @classmethod
    def of(cls, case: Case) -> CaseResult:
        return cls(
            case.name,
            case.group,
            case.shape,
            case.traffic_bytes,
            case.flops,
            case.flops_rule,
            case.rtol,
        )

    def median(self, candidate: str) -> float | None:
        rounds = self.timings.get(candidate)
        return _stats(rounds)[0] if rounds else None

    def speedup(self, baseline: str) -> float | None:
        ours, theirs = self.median("deplodock"), self.median(baseline)
        return theirs / ours if ours and theirs else None

    def bandwidth(self) -> float | None:
        """Achieved bytes per second: minimum traffic over deplodock's median time."""
        ours = self.median("deplodock")
        return self.traffic_bytes / (ours * 1e-6) if ours else None

    def flop_rate(self, candidate: str = "deplodock") -> float | None:
        """Achieved FLOP/s of ``candidate``: the case's FLOPs over its median time."""
        median = self.median(candidate)
        return self.flops / (median * 1e-6) if median else None

    def roofline_us(self, bandwidth: float | None, flop_rate: float | None) -> float | None:
        """The least time the case can take, in µs: its minimum traffic at ``bandwidth``
        or its FLOPs at ``flop_rate`` (the fp32 GEMM rate), whichever is longer."""
        if not bandwidth or not flop_rate:
            return None
        return 1e6 * max(self.traffic_bytes / bandwidth, self.flops / flop_rate)


def _stats(rounds_us: Sequence[float]) -> tuple[float, float, float]:
    """(median, p10, p90), exactly as ``Timing`` reports them."""
    ordered = sorted(rounds_us)
    n = len(ordered)
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return middle, ordered[n // 10], ordered[-1 - n // 10]


def geomean(values: Sequence[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def geomean_speedups(results: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
    """Geometric-mean speedup of deplodock over each baseline, overall and per group,
    over the cases timed against that baseline."""

    def summary(rows: Sequence[CaseResult]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for baseline in BASELINES:
            speedups = [s for r in rows if (s := r.speedup(baseline)) is not None]
            out[baseline] = {"geomean": geomean(speedups), "cases": len(speedups)}
        return out

    return {
        "overall": summary(results),
        **{g: summary([r for r in results if r.group == g]) for g in _group_order(results)},
    }


# -------------------------------------------------------------------- report


def _us(rounds: Sequence[float] | None) -> str:
    if not rounds:
        return "—"
    median, lo, hi = _stats(rounds)
    return f"{median:.1f} [{lo:.1f}, {hi:.1f}]"


def _times(x: float | None) -> str:
    return f"{x:.2f}×" if x is not None else "—"


def _size(n: float) -> str:
    for prefix in ("", "K", "M", "G", "T"):
        if abs(n) < 1000 or prefix == "T":
            return f"{n:.0f} B" if not prefix else f"{n:.1f} {prefix}B"
        n /= 1000
    raise AssertionError


def reference_bandwidth(env: dict[str, Any]) -> tuple[float | None, str]:
    """The copy bandwidth "% of copy" is taken against, and where it comes from."""
    if "H200" in str(env.get("gpu", "")):
        return H200_COPY_BANDWIDTH, "H200_COPY_BANDWIDTH (4.25 TB/s, measured 2026-11-29)"
    measured = (env.get("copy") or {}).get("bandwidth")
    if measured:
        return measured, "the device-to-device copy measured in this run"
    return None, "none (not an H200, copy not measured)"


def reference_flops(env: dict[str, Any]) -> tuple[float | None, str]:
    """The fp32 GEMM FLOP/s "% of fp32 GEMM" is taken against, and where it comes from."""
    if "H200" in str(env.get("gpu", "")):
        return H200_FP32_GEMM, "H200_FP32_GEMM (51 TFLOP/s, cuBLAS fp32, TF32 off)"
    measured = (env.get("gemm") or {}).get("flop_rate")
    if measured:
        return measured, f"the {GEMM_N}³ fp32 torch.mm measured in this run"
    return None, "none (not an H200, GEMM not measured)"


def _group_order(results: Sequence[CaseResult]) -> list[str]:
    groups = [g for g in GROUPS if any(r.group == g for r in results)]
    return groups + sorted({r.group for r in results} - set(groups))


def _eager_label(group: str) -> str:
    return "cuBLAS (eager)" if group in CUBLAS_GROUPS else "eager"


def _tolerances(results: Sequence[CaseResult], env: dict[str, Any]) -> str:
    """The tolerances the cases were held to, by group: ``1e-05 (seed), 0.0001 (matmul)``."""
    if env.get("rtol") is not None:
        return f"{env['rtol']:g} (--rtol, every case)"
    by_rtol: dict[float, list[str]] = {}
    for r in results:
        if r.rtol is not None and r.group not in by_rtol.setdefault(r.rtol, []):
            by_rtol[r.rtol].append(r.group)
    return ", ".join(f"{t:g} ({', '.join(gs)})" for t, gs in by_rtol.items()) or "?"


def _strict_text(env: dict[str, Any]) -> str:
    fp32 = env.get("fp32")
    if not fp32:
        return "TF32 settings not recorded"
    return "; ".join(f"{k} = {v}" for k, v in fp32.items())


def _pdl_text(env: dict[str, Any]) -> str:
    pdl = env.get("pdl")
    if pdl is None:
        return "programmatic dependent launch not recorded"
    state = "on (sm_90 and later)" if pdl else "off"
    return f"programmatic dependent launch {state}, `DEPLODOCK_PDL`"


def _passes_text(env: dict[str, Any]) -> str:
    """The ``-p`` options every case was compiled with, or ``defaults``."""
    return ", ".join(f"`{p}`" for p in env.get("passes") or []) or "defaults"


def format_markdown(results: Sequence[CaseResult], env: dict[str, Any]) -> str:
    reference, basis = reference_bandwidth(env)
    peak, peak_basis = reference_flops(env)
    rounds, calls = env.get("rounds"), env.get("calls")
    budget = env.get("budget")
    adapt = (
        f" (fewer for a case whose timing would pass {budget:g} s of GPU time: its notes "
        "say how many)"
        if budget
        else ""
    )
    lines = [
        "# deplodock bench",
        "",
        *([f"**Partial report: {env['partial']}.**", ""] if env.get("partial") else []),
        f"- date: {env.get('date', '?')}",
        f"- GPU: {env.get('gpu', '?')}; torch {env.get('torch', '?')}"
        f" (CUDA {env.get('cuda', '?')}), NVRTC {env.get('nvrtc', '?')}, "
        f"Python {env.get('python', '?')}",
        f"- command: `{env.get('command', '?')}`",
        f"- commit: {env.get('commit', '?')}",
        f"- method: fp32; fresh random inputs and parameters (seed {env.get('seed', '?')}); "
        f"max rel err = max |deplodock − eager| / max |eager|, tolerance "
        f"{_tolerances(results, env)}; GPU time per call from CUDA graphs of {calls} calls, "
        f"median of {rounds} interleaved rounds{adapt} [p10, p90], in µs; speedup = "
        "baseline median / deplodock median; GB/s = minimum traffic (inputs and "
        "parameters read once, outputs written once) / deplodock median (calls run back "
        "to back, so a case whose data fits in L2 is measured warm and can exceed the copy "
        "bandwidth); TFLOP/s = the case's FLOPs / deplodock median; roofline = the longer "
        "of the minimum traffic at the copy bandwidth and the FLOPs at the fp32 GEMM rate, "
        "% roofline = roofline / deplodock median",
        f"- fp32 for the baselines too (eager and torch.compile): {_strict_text(env)}",
        f"- deplodock's launches: {_pdl_text(env)}",
        f"- deplodock's passes: {_passes_text(env)}",
        f"- copy bandwidth for %: {basis}",
        f"- fp32 GEMM for %: {peak_basis}",
    ]
    if env.get("copy_error"):
        lines.append(f"- device-to-device copy not measured: {_one_line(env['copy_error'])}")
    copy = env.get("copy")
    if copy:
        lines.append(
            f"- measured this run: device-to-device copy of {_size(copy['bytes'] / 2)}, "
            f"{copy['bandwidth'] / 1e12:.2f} TB/s (read + write, median of rounds)"
        )
    if env.get("gemm_error"):
        lines.append(f"- fp32 GEMM not measured: {_one_line(env['gemm_error'])}")
    gemm = env.get("gemm")
    if gemm:
        n = gemm["n"]
        lines.append(
            f"- measured this run: fp32 torch.mm of {n}x{n} by {n}x{n} (cuBLAS, TF32 off), "
            f"{gemm['flop_rate'] / 1e12:.1f} TFLOP/s (median of rounds)"
        )
    lines += ["", "## Geomean speedup of deplodock", ""]
    lines += ["| group | vs eager | vs torch.compile |", "| --- | --- | --- |"]
    for group, summary in geomean_speedups(results).items():
        cells = [
            f"{_times(summary[b]['geomean'])} ({summary[b]['cases']} cases)" for b in BASELINES
        ]
        label = f"{group} (eager: cuBLAS)" if group in CUBLAS_GROUPS else group
        lines.append(f"| {label} | {' | '.join(cells)} |")
    lines += ["", "## Cases"]
    for group in _group_order(results):
        flop = group in FLOP_GROUPS
        rate, share = ("TFLOP/s", "% fp32 GEMM") if flop else ("GB/s", "% copy BW")
        eager = _eager_label(group)
        lines += [
            "",
            f"### {group}",
            "",
            f"| case | shape | roofline µs | deplodock µs | {eager} µs | torch.compile µs "
            f"| vs {eager} | vs torch.compile | {rate} | {share} | % roofline | max rel err |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in results:
            if r.group != group:
                continue
            if flop:
                achieved, ceiling, unit = r.flop_rate(), peak, 1e12
            else:
                achieved, ceiling, unit = r.bandwidth(), reference, 1e9
            ours = _us(r.timings.get("deplodock")) if r.status == "ok" else f"**{r.status}**"
            roof = r.roofline_us(reference, peak)
            median = r.median("deplodock")
            cells = [
                f"`{r.name}`",
                r.shape,
                f"{roof:.1f}" if roof else "—",
                ours,
                _us(r.timings.get("eager")),
                _us(r.timings.get("torch.compile")),
                _times(r.speedup("eager")),
                _times(r.speedup("torch.compile")),
                (f"{achieved / unit:.1f}" if flop else f"{achieved / unit:.0f}")
                if achieved
                else "—",
                f"{100 * achieved / ceiling:.0f}%" if achieved and ceiling else "—",
                f"{100 * roof / median:.0f}%" if roof and median else "—",
                f"{r.max_rel_err:.1e}" if r.max_rel_err is not None else "—",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    failed = [r for r in results if r.status != "ok"]
    if failed:
        lines += ["", "## Failures", ""]
        for r in failed:
            lines.append(f"- `{r.name}`: {r.status}: {_one_line(r.error)}")
    profiled = [r for r in results if r.profiles]
    if profiled:
        from deplodock.bench.profile import kernel_table

        lines += ["", "## Kernels", ""]
        lines.append(
            "Per case, each candidate's slowest kernels (`--kernels`: torch.profiler, the "
            "mean of 3 calls; GPU time without launch gaps, so a sum can be below the median)."
        )
        for r in profiled:
            lines += ["", f"### `{r.name}`", *kernel_table(r.profiles)]
    noted = [r for r in results if r.notes]
    if noted:
        lines += ["", "## Notes", ""]
        for r in noted:
            lines += [f"- `{r.name}`: {_one_line(note)}" for note in r.notes]
    chart = env.get("chart")
    if chart == "results.png":
        lines += ["", "![speedup over torch.compile per case](results.png)"]
    elif chart:
        lines += ["", f"({chart})"]
    return "\n".join(lines) + "\n"


def _one_line(text: str, limit: int = 600) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _finite(value: Any) -> Any:
    """JSON has no inf or NaN: they become the strings "inf", "-inf", "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def results_json(results: Sequence[CaseResult], env: dict[str, Any]) -> dict[str, Any]:
    reference, basis = reference_bandwidth(env)
    peak, peak_basis = reference_flops(env)
    cases = []
    for r in results:
        row = asdict(r)
        row["summary"] = {
            name: dict(zip(("median_us", "p10_us", "p90_us"), _stats(rounds), strict=True))
            for name, rounds in r.timings.items()
        }
        row["speedup"] = {b: r.speedup(b) for b in BASELINES}
        bw = r.bandwidth()
        row["bandwidth_Bps"] = bw
        row["copy_fraction"] = bw / reference if bw and reference else None
        rates = {name: r.flop_rate(name) for name in r.timings}
        row["flop_rate"] = rates  # FLOP/s of every candidate (eager: cuBLAS for matmul)
        ours = rates.get("deplodock")
        row["gemm_fraction"] = ours / peak if ours and peak else None
        cases.append(row)
    return _finite(
        {
            "environment": env,
            "copy_bandwidth": {"reference_Bps": reference, "basis": basis},
            "fp32_gemm": {"reference_flop_rate": peak, "basis": peak_basis},
            "geomean_speedup": geomean_speedups(results),
            "cases": cases,
        }
    )


def write_chart(results: Sequence[CaseResult], path: Path) -> str | None:
    """results.png, the speedup over torch.compile per case on a log scale; else why not
    (matplotlib missing, nothing timed against torch.compile, matplotlib failing)."""
    rows = [(r.name, r.group, s) for r in results if (s := r.speedup("torch.compile"))]
    if not rows:
        return "no case was timed against torch.compile"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed"
    try:
        _draw(plt, rows, path)
    except Exception as error:  # an optional chart never costs the measured numbers
        path.unlink(missing_ok=True)
        return f"matplotlib failed: {_describe(error)}"
    return None


def _draw(plt, rows: Sequence[tuple[str, str, float]], path: Path) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    groups = list(dict.fromkeys(g for _, g, _ in rows))
    colours = {g: f"C{i}" for i, g in enumerate(groups)}
    speedups = [s for _, _, s in rows]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(rows) + 1.5))
    y = list(range(len(rows)))[::-1]
    # Bars start at 1×: right of the line deplodock is faster, left of it slower.
    ax.barh(y, [s - 1 for s in speedups], left=1, color=[colours[g] for _, g, _ in rows])
    for yi, s in zip(y, speedups, strict=True):
        ax.text(
            s,
            yi,
            f" {s:.2f}× ",
            va="center",
            ha="left" if s >= 1 else "right",
            fontsize=7,
        )
    ax.set_yticks(y, [n for n, _, _ in rows], fontsize=8)
    ax.set_xscale("log")
    reach = max(max(speedups), 1 / min(speedups), 1.25) * 1.6
    ax.set_xlim(1 / reach, reach)
    ticks = [2.0**k for k in range(-8, 9) if 1 / reach <= 2.0**k <= reach]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{t:g}×" for t in ticks])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("speedup over torch.compile, median GPU time (right of 1×: deplodock faster)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[g]) for g in groups]
    ax.legend(handles, groups, loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(
    results: Sequence[CaseResult], env: dict[str, Any], out: Path, partial: str | None = None
) -> dict[str, Any]:
    """Write results.json, results.png (with matplotlib) and results.md under ``out``;
    the paths written (``png`` None when the chart was not) and, if not, why not.
    ``partial`` ("3 of 24") marks a report written while the run goes on (no chart)."""
    out.mkdir(parents=True, exist_ok=True)
    md, js, png = out / "results.md", out / "results.json", out / "results.png"
    if partial:
        env = {**env, "partial": f"{partial} cases so far; the run did not finish"}
    js.write_text(json.dumps(results_json(results, env), indent=1) + "\n")  # numbers first
    png.unlink(missing_ok=True)  # never leave an older run's chart beside new numbers
    skipped = write_chart(results, png) if not partial else "the run did not finish"
    chart = f"results.png not written: {skipped}" if skipped else "results.png"
    md.write_text(format_markdown(results, {**env, "chart": chart}))
    return {"md": md, "json": js, "png": None if skipped else png, "chart": chart}


# ------------------------------------------------------------------ the command


def format_listing(cases: Sequence[Case]) -> str:
    width = max(len(c.name) for c in cases)
    lines = [f"{'case':<{width}}  {'group':<13} {'traffic':>9} {'MFLOP':>9}  shape"]
    for c in cases:
        lines.append(
            f"{c.name:<{width}}  {c.group:<13} {_size(c.traffic_bytes):>9} "
            f"{c.flops / 1e6:>9.1f}  {c.shape}"
        )
    return "\n".join(lines)


class _Progress:
    """One line per finished case; a tqdm bar above them when tqdm is installed and
    stderr is a terminal (a bar in a log file is noise)."""

    def __init__(self, total: int):
        self.total, self.done, self.bar = total, 0, None
        if sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, file=sys.stderr, unit="case", leave=False)
            except ImportError:
                pass

    def start(self, name: str) -> None:
        if self.bar is not None:
            self.bar.set_description(name)

    def finish(self, line: str) -> None:
        self.done += 1
        text = f"[{self.done:>{len(str(self.total))}}/{self.total}] {line}"
        if self.bar is not None:
            self.bar.write(text)
            self.bar.update()
        else:
            print(text, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _case_line(r: CaseResult, reference: float | None, peak: float | None = None) -> str:
    head = f"{r.name}: {r.status}"
    if r.status == "compiled":
        n = len(r.kernels)
        return f"{head} ({n} kernel{'s' if n != 1 else ''}, {r.compile_s:.1f} s)"
    if r.status != "ok":
        return f"{head}: {_one_line(r.error, 300)}"
    parts = [f"{name} {r.median(name):.1f} µs" for name in CANDIDATES if r.timings.get(name)]
    speed = ", ".join(f"{s:.2f}× {b}" for b in BASELINES if (s := r.speedup(b)) is not None)
    if r.group in FLOP_GROUPS:
        rate = r.flop_rate()
        share = f" ({100 * rate / peak:.0f}% of fp32 GEMM)" if rate and peak else ""
        achieved = f"{rate / 1e12:.1f} TFLOP/s{share}" if rate else ""
    else:
        bw = r.bandwidth()
        share = f" ({100 * bw / reference:.0f}% of copy)" if bw and reference else ""
        achieved = f"{bw / 1e9:.0f} GB/s{share}" if bw else ""
    return f"{head}, max rel err {r.max_rel_err:.1e}; {'; '.join(parts)}; {speed}; {achieved}"


def _describe(error: BaseException) -> str:
    if isinstance(error, UserInputError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _compile_case(case: Case, arch: str, result: CaseResult, options: dict | None = None):
    """(captured program, CompiledProgram), or (None, None) with the failure recorded;
    ``options``: passes configured by ``-p`` (``cli.pass_options``)."""
    from deplodock.frontends.export import import_program
    from deplodock.pipeline import compile_program

    started = time.perf_counter()
    try:
        captured = case.build()
        started = time.perf_counter()  # from here: compile time (capture excluded)
        module = import_program(captured.program).module
        program = compile_program(module, arch=arch, options=options)
    except Exception as error:
        result.status, result.error = "compile failed", _describe(error)
        return None, None
    finally:
        result.compile_s = time.perf_counter() - started
    for k in program.kernels:
        res = program.resources.get(k.sym_name.data)
        result.kernels.append(
            {
                "name": k.sym_name.data,
                "grid": list(k.grid_shape),
                "block": list(k.block_shape),
                **(
                    {
                        "registers": res.registers,
                        "shared_bytes": res.shared_bytes,
                        "spill_stores": res.spill_stores,
                        "spill_loads": res.spill_loads,
                    }
                    if res
                    else {}
                ),
            }
        )
    result.status = "compiled"
    return captured, program


def _measure_case(captured, program, result: CaseResult, args) -> None:
    """Check deplodock against eager on fresh inputs; if it matches, time all three."""
    import torch

    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.reference import fresh_inputs, output_error

    inputs, user_inputs, reference = fresh_inputs(captured, program.func, result.seed)
    got = program(*inputs)
    want = reference()
    torch.cuda.synchronize()
    errors = [output_error(g, w) for g, w in zip(got, want, strict=True)]
    del got, want
    result.outputs = [asdict(e) for e in errors]
    result.max_rel_err = max((e.max_rel for e in errors), default=0.0)
    rtol = args.rtol if args.rtol is not None else result.rtol
    result.rtol = rtol
    if not all(e.ok(rtol) for e in errors):
        result.status = "mismatch"
        result.error = f"max rel err {result.max_rel_err:.3e} > rtol {rtol:g}; not timed"
        return
    candidates = {"deplodock": lambda: program(*inputs, poison=False), "eager": reference}
    torch._dynamo.reset()
    compiled = torch.compile(captured.module, dynamic=False)
    try:
        with torch.no_grad():
            compiled(*user_inputs)
        torch.cuda.synchronize()
        candidates["torch.compile"] = lambda: compiled(*user_inputs)
    except Exception as error:
        result.notes.append(f"torch.compile failed, not timed: {_describe(error)}")
    with torch.no_grad():
        estimates = _estimate_us(candidates)
        rounds, calls = plan_timing(estimates, args.rounds, args.calls, args.budget)
        if (rounds, calls) != (args.rounds, args.calls):
            slowest = max(estimates, key=estimates.get)
            result.notes.append(
                f"timed with {calls} calls per graph and {rounds} rounds (about "
                f"{estimates[slowest]:.0f} µs a call for {slowest}; --budget {args.budget:g} s)"
            )
        timings = time_graphs(candidates, rounds=rounds, calls=calls)
        if getattr(args, "kernels", False):
            from deplodock.bench.profile import kernel_times

            result.profiles = {
                name: [asdict(k) for k in kernel_times(fn)] for name, fn in candidates.items()
            }
    result.rounds, result.calls = rounds, calls
    result.timings = {name: list(t.rounds_us) for name, t in timings.items()}
    result.status = "ok"


def _estimate_us(candidates: dict[str, Any]) -> dict[str, float]:
    """Each candidate's time per call, roughly: one call, synchronised on both sides
    (launch overhead included, which only matters where timing is cheap anyway)."""
    import torch

    estimates = {}
    for name, fn in candidates.items():
        torch.cuda.synchronize()
        started = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        estimates[name] = (time.perf_counter() - started) * 1e6
    return estimates


def plan_timing(
    per_call_us: dict[str, float], rounds: int, calls: int, budget_s: float
) -> tuple[int, int]:
    """(rounds, calls per graph) for one case: the requested ones, unless timing every
    candidate with them would take more than ``budget_s`` of GPU time; then first fewer
    calls per graph (no fewer than keep the fastest candidate's graph ``MIN_GRAPH_US``
    long, so launch gaps and event overhead stay negligible), then fewer rounds (no
    fewer than ``MIN_ROUNDS``). ``budget_s`` 0 or less keeps the requested ones.

    Warm-up and graph capture are not counted: they add about 4 calls per candidate."""
    one_each = sum(per_call_us.values())  # µs for one call of every candidate
    budget_us = budget_s * 1e6
    if budget_s <= 0 or one_each <= 0 or rounds * calls * one_each <= budget_us:
        return rounds, calls
    fastest = max(min(per_call_us.values()), 1e-3)
    floor_calls = min(calls, max(1, math.ceil(MIN_GRAPH_US / fastest)))
    calls = max(floor_calls, int(budget_us // (rounds * one_each)))
    if rounds * calls * one_each <= budget_us:
        return rounds, calls
    rounds = max(min(rounds, MIN_ROUNDS), int(budget_us // (calls * one_each)))
    return rounds, calls


def _measure_copy(args) -> dict[str, Any]:
    """Bandwidth of a large device-to-device copy, read + write, timed like the cases."""
    import torch

    from deplodock.backends.cuda.timing import time_graphs

    src = torch.randn(COPY_BYTES // 4, device="cuda")
    dst = torch.empty_like(src)
    timing = time_graphs({"copy": lambda: dst.copy_(src)}, rounds=args.rounds, calls=args.calls)
    rounds = list(timing["copy"].rounds_us)
    return {
        "bytes": 2 * COPY_BYTES,
        "rounds_us": rounds,
        "bandwidth": 2 * COPY_BYTES / (_stats(rounds)[0] * 1e-6),
    }


def _measure_gemm(args) -> dict[str, Any]:
    """FLOP/s of cuBLAS's fp32 GEMM (TF32 off: ``strict_fp32`` has run), a GEMM_N³
    ``torch.mm`` timed like the cases: the measured ceiling of the matmul group."""
    import torch

    from deplodock.backends.cuda.timing import time_graphs

    n = GEMM_N
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    out = torch.empty(n, n, device="cuda")
    mm = {"mm": lambda: torch.mm(a, b, out=out)}
    mm["mm"]()  # cuBLAS picks its kernel and allocates its workspace before the estimate
    rounds, calls = plan_timing(_estimate_us(mm), args.rounds, args.calls, args.budget)
    timing = time_graphs(mm, rounds=rounds, calls=calls)
    times = list(timing["mm"].rounds_us)
    return {
        "n": n,
        "flops": 2 * n**3,
        "rounds_us": times,
        "flop_rate": 2 * n**3 / (_stats(times)[0] * 1e-6),
    }


def strict_fp32() -> dict[str, Any]:
    """No TF32 anywhere: cuBLAS and cuDNN compute fp32 as fp32, for eager and for
    torch.compile (whose default mode calls the same cuBLAS). Returns the settings as
    torch reports them afterwards, for the report's environment."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    # torch.testing's harness (OpInfo, imported first in one process) freezes the cuDNN
    # flags, and setting one then raises: its own escape hatch lets the bench set it
    unfrozen = getattr(torch.backends, "__allow_nonbracketed_mutation", contextlib.nullcontext)
    with unfrozen():
        torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return {
        "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def _commit() -> str:
    """$DEPLODOCK_COMMIT when set (a copied tree has no .git); else the git commit of
    the current folder or of this package's, "+ uncommitted changes" when it has them."""
    if os.environ.get("DEPLODOCK_COMMIT"):
        return os.environ["DEPLODOCK_COMMIT"]
    for where in (Path.cwd(), Path(__file__).resolve().parent):
        try:
            head = subprocess.run(
                ["git", "rev-parse", "HEAD"],
                cwd=where,
                capture_output=True,
                text=True,
                timeout=10,
            )
            if head.returncode != 0:
                continue
            dirty = subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=where,
                capture_output=True,
                text=True,
                timeout=10,
            )
            suffix = " (+ uncommitted changes)" if dirty.stdout.strip() else ""
            return head.stdout.strip() + suffix
        except (OSError, subprocess.SubprocessError):
            continue
    return "unknown (not a git checkout; set DEPLODOCK_COMMIT)"


def _environment(args, gpu: bool) -> dict[str, Any]:
    import torch

    from deplodock.backends.cuda.driver import programmatic_launch_enabled
    from deplodock.backends.cuda.nvrtc import nvrtc_version

    argv = getattr(args, "argv", None)
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": torch.cuda.get_device_name() if gpu else "none",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nvrtc": ".".join(map(str, nvrtc_version())),
        "python": platform.python_version(),
        "command": shlex.join(["deplodock", *argv]) if argv is not None else "deplodock bench",
        "commit": _commit(),
        "arch": args.arch,
        "rounds": args.rounds,
        "calls": args.calls,
        "budget": args.budget,
        "rtol": args.rtol,  # None: each case's own (results.json has it per case)
        "seed": args.seed,
        "pdl": programmatic_launch_enabled(),
        "passes": list(getattr(args, "pass_options", None) or []),  # -p: [] is the defaults
    }


def _measure_ceiling(env: dict[str, Any], key: str, what: str, measure, show) -> None:
    """One machine ceiling measured into ``env[key]`` (or why not, ``env[key + "_error"]``:
    the run goes on with the named constant), then the GPU memory it used freed."""
    try:
        env[key] = measure()
        print(f"{what}: {show(env[key])}")
    except Exception as error:
        env[f"{key}_error"] = _describe(error)
        print(f"{what} not measured: {env[f'{key}_error']}")
    _free_gpu_memory()


def run_bench(args: argparse.Namespace) -> int:
    cases = select(args.filter)
    if not cases:
        raise UserInputError(
            f"no case matches {', '.join(args.filter)}; `deplodock bench --list` lists them"
        )
    if args.list:
        print(format_listing(cases))
        return 0
    if args.rounds < 1 or args.calls < 1:
        raise UserInputError("--rounds and --calls must be at least 1")
    fp32 = strict_fp32()  # before any baseline (or the copy and GEMM) is measured
    from deplodock.pipeline import parse_pass_options

    options = parse_pass_options(args.pass_options, args.arch)

    from deplodock.backends.cuda.driver import gpu_available

    gpu = gpu_available()
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little")
    env = {**_environment(args, gpu), "fp32": fp32}
    if gpu:
        print(f"deplodock bench: {len(cases)} cases on {env['gpu']} (seed {args.seed})")
        if not args.no_copy:
            _measure_ceiling(
                env,
                "copy",
                "device-to-device copy",
                lambda: _measure_copy(args),
                lambda m: f"{m['bandwidth'] / 1e12:.2f} TB/s",
            )
        if not args.no_gemm and any(c.group in FLOP_GROUPS for c in cases):
            _measure_ceiling(
                env,
                "gemm",
                f"fp32 GEMM ({GEMM_N}³)",
                lambda: _measure_gemm(args),
                lambda m: f"{m['flop_rate'] / 1e12:.1f} TFLOP/s",
            )
    else:
        print(f"deplodock bench: {len(cases)} cases, compile only (no GPU)")
    reference, _ = reference_bandwidth(env)
    peak, _ = reference_flops(env)

    results: list[CaseResult] = []
    progress = _Progress(len(cases))
    for index, case in enumerate(cases):
        progress.start(case.name)
        result = CaseResult.of(case)
        result.seed = (args.seed + index * 7919) % (1 << 32) if gpu else None
        captured, program = _compile_case(case, args.arch, result, options)
        if gpu and program is not None:
            try:
                _measure_case(captured, program, result, args)
            except Exception as error:
                result.status, result.error = "error", _describe(error)
            finally:
                del captured, program
                _free_gpu_memory()
        results.append(result)
        progress.finish(_case_line(result, reference, peak))
        if gpu:  # what is measured survives a run cut short
            write_report(results, env, Path(args.out), partial=f"{len(results)} of {len(cases)}")
    progress.close()

    failed = [r for r in results if r.status not in ("ok", "compiled")]
    if not gpu:
        print(
            f"deplodock: no CUDA GPU on this machine: compiled {len(results) - len(failed)} "
            f"of {len(results)} cases for {args.arch} with NVRTC; nothing was timed and no "
            "report was written",
            file=sys.stderr,
        )
        if not args.no_gpu_ok:
            return EXIT_NO_GPU
        return EXIT_FAILED if failed else 0

    paths = write_report(results, env, Path(args.out))
    for group, summary in geomean_speedups(results).items():
        cells = ", ".join(
            f"{_times(summary[b]['geomean'])} vs {b} ({summary[b]['cases']})" for b in BASELINES
        )
        print(f"geomean {group}: {cells}")
    written = [str(paths[k]) for k in ("md", "json", "png") if paths[k] is not None]
    print(f"report: {', '.join(written)}")
    if paths["png"] is None:
        print(f"({paths['chart']})")
    if failed:
        print(f"{len(failed)} of {len(results)} cases failed: {', '.join(r.name for r in failed)}")
    return EXIT_FAILED if failed else 0


def _free_gpu_memory() -> None:
    import gc

    import torch

    gc.collect()
    try:
        torch.cuda.empty_cache()
    except Exception:  # a sticky CUDA error: the next case reports it, the report is kept
        pass
