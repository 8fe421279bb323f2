"""GPU time per call, measured the way the project reports every speed figure.

Each candidate is captured once in a CUDA graph of ``calls`` back-to-back calls (so launch
overhead from Python does not count, as in a model run); then, round by round, every
candidate's graph is replayed once between CUDA events, interleaved so clock and thermal
drift hit all of them alike. The result per candidate is the per-call time of each round;
callers report the median and the spread.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Timing:
    name: str
    rounds_us: list[float]  # per-call microseconds, one entry per round

    @property
    def median_us(self) -> float:
        return statistics.median(self.rounds_us)

    @property
    def spread_us(self) -> tuple[float, float]:
        ordered = sorted(self.rounds_us)
        return ordered[len(ordered) // 10], ordered[-1 - len(ordered) // 10]


def time_graphs(
    candidates: dict[str, Callable[[], object]], rounds: int = 30, calls: int = 20
) -> dict[str, Timing]:
    """Median-of-rounds GPU time per call of each zero-argument callable."""
    graphs: dict[str, torch.cuda.CUDAGraph] = {}
    stream = torch.cuda.Stream()
    for name, fn in candidates.items():
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):  # warm up: compile, allocate, load modules outside capture
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        graphs[name] = graph
    torch.cuda.synchronize()
    results: dict[str, list[float]] = {name: [] for name in candidates}
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for name in candidates:  # one untimed replay each
        graphs[name].replay()
    for _ in range(rounds):
        for name, graph in graphs.items():
            start.record()
            graph.replay()
            stop.record()
            stop.synchronize()
            results[name].append(start.elapsed_time(stop) * 1000.0 / calls)
    return {name: Timing(name, times) for name, times in results.items()}
