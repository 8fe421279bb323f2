"""Mutation testing of the command-line boundary: broken IR must never end in a traceback.

    python -m deplodock.bench.mutate --mutants 200 --jobs 2      # a table of exit statuses
    python -m deplodock.bench.mutate --show-internal              # and each internal error

Small programs are printed at every level (torch … kernel), then mutated the way hand
edits and bad tools break IR: a line deleted, two lines swapped, a line duplicated, a
number or an element type changed, a value renamed. Each mutant goes through ``deplo-opt``
in this process one of three ways (in turn): parsed and printed back, lowered by the
passes that take its level to the kernel level, or emitted with ``-t cuda``. Every run must
end in an exit status of ``deplodock.boundary`` with its message (1 for the input's fault, 3 for an
internal compiler error, naming the pass), never in an exception escaping ``main``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

# Expressions printed at every level: a norm (reduce then map), softmax (two reductions),
# a matmul with bias and relu (the register tile, staged inputs), broadcasting arithmetic.
PROGRAMS = {
    "rmsnorm": "torch.nn.RMSNorm(64)(torch.randn(4, 64))",
    "softmax": "torch.softmax(torch.randn(6, 40), -1)",
    "matmul": "torch.relu(torch.matmul(torch.randn(16, 64) + torch.randn(64), "
    "torch.randn(64, 16)))",
    "broadcast": "torch.randn(5, 1, 3) * torch.randn(4, 1) - 2.5",
}

TYPES = ("f32", "f16", "bf16", "f64", "i32", "i64", "i1", "index")
NUMBERS = (0, 1, -1, 2, 3, 7, 31, 32, 33, 1024, 65536, 2**31, 2**40)
_NUMBER = re.compile(r"(?<![%\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(?![\w.])")
_TYPE = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i32|i64|index)\b")
_VALUE = re.compile(r"%[\w.$-]+")


def printed_levels(programs: dict[str, str] = PROGRAMS) -> dict[str, str]:
    """``{"rmsnorm.loop": text, ...}``: each program printed at each level."""
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.pipeline import LEVELS, lower

    texts = {}
    for name, source in programs.items():
        for level in LEVELS[:-1]:
            module = import_program(capture_expression(source).program).module
            if level != "torch":
                lower(module, to=level)
            texts[f"{name}.{level}"] = str(module) + "\n"
    return texts


def _delete(lines: list[str], rng: random.Random) -> list[str]:
    i = rng.randrange(len(lines))
    return lines[:i] + lines[i + 1 :]


def _swap(lines: list[str], rng: random.Random) -> list[str]:
    i = rng.randrange(len(lines))
    j = min(len(lines) - 1, i + rng.choice((1, 1, 2, 3)))
    out = list(lines)
    out[i], out[j] = out[j], out[i]
    return out


def _duplicate(lines: list[str], rng: random.Random) -> list[str]:
    i = rng.randrange(len(lines))
    return lines[: i + 1] + [lines[i]] + lines[i + 1 :]


def _in_a_line(pattern: re.Pattern, replace: Callable[[str, random.Random], str]):
    def mutate(lines: list[str], rng: random.Random) -> list[str]:
        candidates = [i for i, line in enumerate(lines) if pattern.search(line)]
        if not candidates:
            return lines
        i = rng.choice(candidates)
        matches = list(pattern.finditer(lines[i]))
        m = rng.choice(matches)
        out = list(lines)
        out[i] = lines[i][: m.start()] + replace(m.group(0), rng) + lines[i][m.end() :]
        return out

    return mutate


def _number(text: str, rng: random.Random) -> str:
    if "." in text or "e" in text:
        return rng.choice(("0.0", "-1.0", "3.4e+38", "-3.40282347e+38", "1e-45", "nan"))
    return str(rng.choice(NUMBERS + (int(text) + 1, int(text) - 1)))


def _type(text: str, rng: random.Random) -> str:
    return rng.choice([t for t in TYPES if t != text])


def _renamer(names: list[str]):
    def rename(text: str, rng: random.Random) -> str:
        return rng.choice([n for n in names if n != text] or ["%undefined"])

    return rename


def mutants(text: str, count: int, rng: random.Random) -> Iterator[tuple[str, str]]:
    """``count`` mutants of ``text``, each with the name of its mutation."""
    lines = text.splitlines()
    names = sorted(set(_VALUE.findall(text))) + ["%undefined"]
    mutations = {
        "delete": _delete,
        "swap": _swap,
        "duplicate": _duplicate,
        "number": _in_a_line(_NUMBER, _number),
        "type": _in_a_line(_TYPE, _type),
        "rename": _in_a_line(_VALUE, _renamer(names)),
    }
    kinds = sorted(mutations)
    for _ in range(count):
        kind = rng.choice(kinds)
        mutated = mutations[kind](lines, rng)
        if rng.random() < 0.25:  # sometimes two mutations at once
            second = rng.choice(kinds)
            mutated, kind = mutations[second](mutated, rng), f"{kind}+{second}"
        yield kind, "\n".join(mutated) + "\n"


@dataclass
class Outcome:
    """How one ``deplo-opt`` run of a mutant ended."""

    seed: str
    mode: str
    status: int | None  # None: an exception escaped main
    stderr: str
    escaped: str = ""  # the traceback, when one escaped


def run_deplo_opt(args: Sequence[str]) -> tuple[int | None, str, str]:
    """``deplo-opt args`` in this process: (exit status or None, stderr, the traceback
    of an exception that escaped ``main``, or "")."""
    from deplodock.opt import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:  # noqa: BLE001 - exactly what this test looks for
            return None, err.getvalue(), traceback.format_exc()
    return status, err.getvalue(), ""


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def tracebacks(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status is None or "Traceback" in o.stderr]

    def table(self) -> str:
        counts = Counter((o.mode, o.status) for o in self.outcomes)
        modes = sorted({o.mode for o in self.outcomes})
        statuses = sorted({o.status for o in self.outcomes}, key=lambda s: (s is None, s or 0))
        head = "| mode | " + " | ".join("traceback" if s is None else f"exit {s}" for s in statuses)
        lines = [head + " |", "|---" * (len(statuses) + 1) + "|"]
        for mode in modes:
            cells = " | ".join(str(counts.get((mode, s), 0)) for s in statuses)
            lines.append(f"| {mode} | {cells} |")
        return "\n".join(lines)


MODES = ("print", "passes", "cuda")


def _jobs_of(texts: dict[str, str], mutants_per_text: int, seed: int) -> list[tuple]:
    """Every mutant with its run: ``(label, mode, text, deplo-opt arguments after the path)``.
    Mutant ``i`` of a text runs in mode ``i % 3``: parsed and printed, through the passes
    to the kernel level, or emitted as CUDA."""
    from deplodock.pipeline import passes_between

    rng = random.Random(seed)
    jobs = []
    for name, text in texts.items():
        level = name.rsplit(".", 1)[1]
        passes = ",".join(passes_between(level, "kernel"))
        for i, (kind, mutant) in enumerate(mutants(text, mutants_per_text, rng)):
            mode = MODES[i % len(MODES)]
            if mode == "passes" and not passes:
                mode = "print"
            extra = {"print": [], "passes": ["-p", passes], "cuda": ["-t", "cuda"]}[mode]
            jobs.append((f"{name}#{i} ({kind})", mode, mutant, extra))
    return jobs


def _run_chunk(chunk: list[tuple]) -> list[Outcome]:
    import os
    import tempfile

    outcomes = []
    with tempfile.TemporaryDirectory(prefix="deplodock-mutate-") as folder:
        os.environ.setdefault("DEPLODOCK_CACHE_DIR", folder)  # reproducers of exit-3 runs
        for n, (label, mode, text, extra) in enumerate(chunk):
            path = os.path.join(folder, f"mutant{n}.mlir")
            with open(path, "w") as f:
                f.write(text)
            status, stderr, escaped = run_deplo_opt([path, *extra])
            outcomes.append(Outcome(label, mode, status, stderr, escaped))
    return outcomes


def run(
    mutants_per_text: int,
    seed: int = 0,
    jobs: int = 1,
    texts: dict[str, str] | None = None,
) -> Report:
    """Mutate every printed level ``mutants_per_text`` times and run each mutant once
    (``_jobs_of``), in ``jobs`` spawned processes."""
    texts = texts if texts is not None else printed_levels()
    work = _jobs_of(texts, mutants_per_text, seed)
    chunks = [work[i::jobs] for i in range(jobs)]
    if jobs <= 1:
        return Report(_run_chunk(work))
    import concurrent.futures
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        results = list(pool.map(_run_chunk, chunks))
    return Report([o for chunk in results for o in chunk])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deplodock.bench.mutate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--mutants", type=int, default=100, help="mutants per printed level")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--show-internal", action="store_true", help="list the exit-3 runs")
    args = parser.parse_args(argv)

    report = run(args.mutants, args.seed, args.jobs)
    print(report.table())
    for o in report.tracebacks:
        print(f"\nTRACEBACK {o.seed} {o.mode}:\n{o.escaped or o.stderr}")
    if args.show_internal:
        for o in report.outcomes:
            if o.status == 3:
                print(f"\nexit 3 {o.seed} {o.mode}: {o.stderr.strip().splitlines()[0]}")
    print(f"\n{len(report.outcomes)} mutants; {len(report.tracebacks)} tracebacks")
    return 1 if report.tracebacks else 0


if __name__ == "__main__":
    raise SystemExit(main())
