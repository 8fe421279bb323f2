"""Where a compile's time goes: its stages, each one's seconds and the peak memory after it.

Every entry point records the same table: ``deplodock compile|run --stats`` prints it
with the op counts and kernels (``cli._Steps`` extends ``Stages``); ``deplodock.compile``
and ``torch.compile(backend="deplodock")`` print it on stderr when ``DEPLODOCK_STATS=1``
(``stats_from_env``), one table per compiled program (or per graph dynamo hands over).
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


@dataclass
class Stages:
    """Named stages, timed as they run: (name, seconds, peak RSS in MB after it)."""

    title: str = ""
    rows: list[tuple[str, float, float]] = field(default_factory=list)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time one stage (recorded even when it raises)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.rows.append((name, time.perf_counter() - started, peak_rss_mb()))

    @property
    def total_s(self) -> float:
        return sum(seconds for _, seconds, _ in self.rows)

    def print(self, out: TextIO | None = None) -> None:
        """The table: a line a stage, then the total."""
        out = out or sys.stderr
        print(f"deplodock stats: {self.title}" if self.title else "deplodock stats:", file=out)
        width = max([24, *(len(name) for name, _, _ in self.rows)])
        print(f"  {'step':<{width}} {'time':>9} {'peak RSS':>10}", file=out)
        for name, seconds, rss in self.rows:
            print(f"  {name:<{width}} {seconds:>7.2f} s {rss:>7.0f} MB", file=out)
        print(f"  {'total':<{width}} {self.total_s:>7.2f} s", file=out, flush=True)


class _Off(Stages):
    """What an entry point records when nobody asked: nothing."""

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        yield

    def print(self, out: TextIO | None = None) -> None:
        pass


def unrecorded() -> Stages:
    """A recorder that records and prints nothing (for a caller that passed none)."""
    return _Off()


def stats_from_env(title: str) -> Stages:
    """A recorder for ``title`` that prints when ``DEPLODOCK_STATS`` is set (not "0"),
    else one that records and prints nothing."""
    wanted = os.environ.get("DEPLODOCK_STATS", "0") not in ("", "0")
    return Stages(title) if wanted else _Off(title)
