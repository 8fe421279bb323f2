"""Kernel by kernel: where a candidate's time goes, for ``deplodock bench --kernels``.

The bar is torch.compile kernel for kernel, so a case's one median is not enough to say
what to change: a decoder layer 10% behind could lose it in one projection or spread
over six elementwise kernels. ``kernel_times`` runs a candidate a few times under
``torch.profiler`` (CUPTI's kernel records: deplodock's launches through the CUDA driver
are seen as well as PyTorch's own) and returns each kernel's launches and GPU time per
call; ``kernel_table`` sets the candidates side by side in markdown, slowest kernels
first. The profiler's per-kernel times are GPU time without launch gaps, so a column's
sum can be below the case's median (CUDA-graph time, gaps included)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

TOP = 12  # kernels listed per candidate; the rest are summed in one line


@dataclass(frozen=True)
class KernelTime:
    name: str
    launches: float  # per call
    us: float  # GPU time per call, all its launches


def kernel_times(fn: Callable[[], object], calls: int = 3) -> list[KernelTime]:
    """Each kernel ``fn`` launches, with its launches and GPU µs per call (the mean of
    ``calls`` calls after one warm-up call), slowest first."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    totals: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        entry = totals.setdefault(event.name, [0, 0.0])
        entry[0] += 1
        entry[1] += event.time_range.elapsed_us()  # copies and memsets count too
    rows = [KernelTime(n, c / calls, us / calls) for n, (c, us) in totals.items()]
    return sorted(rows, key=lambda r: -r.us)


def _short(name: str, limit: int = 60) -> str:
    name = name.replace("|", "\\|")
    return name if len(name) <= limit else name[: limit - 1] + "…"


def kernel_table(profiles: Mapping[str, Sequence[Mapping]], top: int = TOP) -> list[str]:
    """Markdown lines: per candidate (deplodock, eager, torch.compile), its ``top``
    slowest kernels (launches a call, µs a call, share of its sum) and the rest summed."""
    lines = []
    for candidate, rows in profiles.items():
        total = sum(r["us"] for r in rows)
        launches = sum(r["launches"] for r in rows)
        lines += [
            "",
            f"{candidate}: {total:.1f} µs of kernels a call, {launches:g} launches",
            "",
            "| kernel | launches | µs | share |",
            "| --- | --- | --- | --- |",
        ]
        for r in rows[:top]:
            share = f"{100 * r['us'] / total:.0f}%" if total else "—"
            lines.append(f"| `{_short(r['name'])}` | {r['launches']:g} | {r['us']:.1f} | {share} |")
        rest = rows[top:]
        if rest:
            us = sum(r["us"] for r in rest)
            n = sum(r["launches"] for r in rest)
            share = f"{100 * us / total:.0f}%" if total else "—"
            lines.append(f"| {len(rest)} more | {n:g} | {us:.1f} | {share} |")
    return lines
