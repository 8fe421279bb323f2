"""Sweep the matmul schedule: every variant of a shape built, checked and timed.

    python -m deplodock.bench.sweep --out DIR                        # the default shapes
    python -m deplodock.bench.sweep --shape linear:128x2048x5632 --splits 1,4,8 --out DIR
    python -m deplodock.bench.sweep --shape matmul:28x512x128x512 --fills planned,single
    python -m deplodock.bench.sweep --shape matmul:8192x32x31x33     # B x M x N x K
    python -m deplodock.bench.sweep --check DIR/sweep.json           # the planner against it
    python -m deplodock.bench.sweep --check A.json --fit --holdout B.json  # fit A, check B

A variant is a block tile (the planner's candidates, each 8 x 8 one also with the other K
chunk, a ``whole_k`` one also with the whole of a short K as its chunk), a number of K
splits, the K steps of a chunk unrolled, the K loop's fill (``planned``: what
``fill-k-loop`` chooses; ``single``: one copy) and the launch-bounds cap the planner
would give it. A tile that does not divide the shape is built padded to it, unsplit (edge
tiles, ``register-tile{bk}`` padding K to its chunk), up to the planner's
``MAX_EDGE_WASTE`` times the real work (``--max-waste``: more, to see whether that cap is
right). Each is built through the passes' own options (``split-matmul-k{splits}``,
``register-tile{tm tn threads_m threads_n bk resident}``, ``chunk-matmul-k{bk}``,
``fill-k-loop{max_bytes=0}``, ``mark-unroll{max_chunk_trips}``), never by patching the
planner, on a process pool, beside ``planned`` (the program as the compiler builds it
today, no option: the planner's tile, or the default schedule where it has none); on a
GPU each is checked against PyTorch and timed beside cuBLAS (``time_graphs``, TF32 off).
Writes ``DIR/sweep.json`` (shape -> variant -> µs, with ``cublas``) and ``DIR/sweep.txt``
(every variant, fastest first). Without a GPU it builds and compiles every variant and
says so.

``--check`` reads such a file (sessions 5 and 6 wrote theirs with the same labels:
``docs/bench/h200-2026-11-30-s6/sweep.json``) and prints, per shape, the variant
``plan_matmul`` picks against the fastest one built as the compiler builds that tile
today, and the geomean of fastest / picked: the fit of the cost model, checked on data;
``--fit`` fits the model's constants to the file first (least squares on log time plus
the picks' loss) and prints them; ``--check`` and ``--holdout`` repeat, the sweeps of
``--holdout`` checked after the fit and not fitted (a fit checked on shapes outside it,
with a geomean of their own). Split counts, tiles and chunks a sweep did not measure are
reported as "not in the sweep". (This replaces sessions 5 and 6's ``sweep.py`` and
``check_cost_model.py``.)
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

# (kind, batch, M, N, K): "linear" is x[1, M, K] @ w[N, K].T, "matmul" a[B, M, K] @ b[B, K, N].
DEFAULT_SHAPES = (
    "linear:32x2048x5632",  # TinyLlama down_proj at S=32
    "linear:128x2048x2048",  # TinyLlama q_proj at S=128
    "linear:128x5632x2048",  # TinyLlama gate/up at S=128
    "linear:512x3584x3584",  # Qwen2.5-7B o_proj at S=512
    "linear:128x3584x18944",  # Qwen2.5-7B down_proj at S=128
    "matmul:1x1024x1024x1024",
    "matmul:1x4096x4096x4096",
    "matmul:32x512x64x512",  # TinyLlama attention's P.V at S=512
)
MAX_BLOCKS = 32 * 132  # a K split's blocks at most
RTOL = 1e-4
PLANNED = "planned"  # the variant built without options


@dataclass(frozen=True)
class Shape:
    kind: str  # "linear" or "matmul"
    batch: int
    m: int
    n: int
    k: int

    @staticmethod
    def parse(text: str) -> Shape:
        kind, _, dims = text.partition(":")
        sizes = [int(d) for d in dims.split("x") if d]
        if kind == "linear" and len(sizes) == 3:
            return Shape(kind, 1, *sizes)
        if kind == "matmul" and len(sizes) == 4:
            return Shape(kind, *sizes)
        raise ValueError(f"a shape is linear:MxNxK or matmul:BxMxNxK, got {text!r}")

    @property
    def name(self) -> str:
        dims = (self.m, self.n, self.k) if self.kind == "linear" else self.dims
        return f"{self.kind}:{'x'.join(map(str, dims))}"

    @property
    def dims(self) -> tuple[int, int, int, int]:
        return self.batch, self.m, self.n, self.k

    @property
    def mixed(self) -> bool:
        """Operands stored both ways (``torch.matmul``'s): the planner's mixed tiles."""
        return self.kind == "matmul"

    def expression(self) -> str:
        b, m, n, k = self.dims
        if self.kind == "linear":
            return f"torch.nn.functional.linear(torch.randn(1,{m},{k}), torch.randn({n},{k}))"
        return f"torch.matmul(torch.randn({b},{m},{k}), torch.randn({b},{k},{n}))"


@dataclass(frozen=True)
class Variant:
    tile: tuple[int, int, int, int, int]  # TM, TN, threads along M, along N, BK
    splits: int
    unroll: int  # K steps of a chunk mark-unroll unrolls
    double: bool  # the planner's fill (two copies) or one copy
    resident: int  # the launch bounds' blocks an SM (1: no cap)

    @property
    def label(self) -> str:
        """``{BM}x{BN}t{threads}k{BK}_S{splits}_u{unroll}_{mx|sb}[_cap]``: session 5's."""
        tm, tn, threads_m, threads_n, bk = self.tile
        block = f"{tm * threads_m}x{tn * threads_n}t{threads_m * threads_n}k{bk}"
        fill = "mx" if self.double else "sb"
        cap = "_cap" if self.resident > 1 else ""
        return f"{block}_S{self.splits}_u{self.unroll}_{fill}{cap}"

    def options(self) -> dict[str, dict]:
        tm, tn, threads_m, threads_n, bk = self.tile
        return {
            "split-matmul-k": {"splits": self.splits},
            "register-tile": {
                "tm": tm,
                "tn": tn,
                "threads_m": threads_m,
                "threads_n": threads_n,
                "bk": bk,
                "resident": self.resident,
            },
            "chunk-matmul-k": {"bk": bk},
            "fill-k-loop": {} if self.double else {"max_bytes": 0},
            "mark-unroll": {"max_chunk_trips": self.unroll},
        }


def variants(
    shape: Shape, splits: tuple[int, ...], fills: tuple[str, ...], max_waste: float = 0.0
) -> list[Variant]:
    """Every candidate tile of the planner for the shape's kind (an 8 x 8 one also with the
    other K chunk, a ``whole_k`` one also with the whole K, ``tile_for``), with each K
    split that leaves 128 of K or more (K padded with zeros to whole chunks a split, as the
    planner pads it; a tile that does not divide M or N: padded, unsplit; the work at most
    ``max_waste`` times the real, 0: ``MAX_EDGE_WASTE``), the chunk's loop rolled (8 steps)
    and unrolled whole, each fill (one for a loop of one chunk), capped as the planner
    would cap it."""
    from deplodock.passes.tile.schedule import matmul as plan

    max_waste = max_waste or plan.MAX_EDGE_WASTE
    b, m, n, k = shape.dims
    found: list[Variant] = []
    for c in plan.CANDIDATES:
        if c.mixed not in (None, shape.mixed) or (b > 1 and not c.batched):
            continue
        if b == 1 and not c.single:
            continue
        chunks = (8, 16) if c.tile.tm == 8 else (c.tile.bk,)
        whole = plan.tile_for(c, k)
        whole_bk = whole.bk if whole is not c.tile else None  # one chunk of the whole K
        for bk in chunks + ((whole_bk,) if whole_bk else ()):
            t = plan.MatmulTile(c.tile.tm, c.tile.tn, c.tile.threads_m, c.tile.threads_n, bk)
            mp, np_, _ = plan.padded_extents(t, m, n, k)
            count = b * (mp // t.block_m) * (np_ // t.block_n)
            for s in (1,) if (mp, np_) != (m, n) else splits:
                kp = plan.padded_extents(t, m, n, k, s)[2]  # K in whole chunks a split
                if mp * np_ * kp > max_waste * m * n * k:
                    continue
                if kp // s < 2 * bk and bk != whole_bk:
                    continue
                if s > 1 and (kp // s < plan.MIN_SPLIT_K or count * s > MAX_BLOCKS):
                    continue
                capped = c.capped and bk == c.tile.bk and plan._fills(c, mp, np_, b * s, _target())
                for unroll in sorted({8, bk}):
                    for fill in fills if kp // s > bk else fills[:1]:
                        tile = (t.tm, t.tn, t.threads_m, t.threads_n, bk)
                        resident = c.resident if capped else 1
                        found.append(Variant(tile, s, unroll, fill == "planned", resident))
    return list(dict.fromkeys(found))


def _target():
    from deplodock.target import target_for

    return target_for("sm_90")


def build(job: tuple[Shape, Variant | None]):
    """One variant lowered to the kernel level and compiled (in a worker process); None:
    the program as the compiler builds it (``PLANNED``)."""
    shape, variant = job
    from deplodock.backends.cuda.emit import emit_kernel_sources
    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.pipeline import lower, make_pass

    module = import_program(capture_expression(shape.expression()).program).module
    chosen = variant.options().items() if variant is not None else ()
    options = {name: make_pass(name, **o) for name, o in chosen}
    lower(module, to="kernel", options=options, guard=False)  # the variant, as forced
    compiled = compile_kernels(emit_kernel_sources(module), arch="sm_90", cache=False, jobs=1)
    return shape, variant, str(module), compiled


def time_shape(shape: Shape, built: list, log) -> dict[str, float]:
    """Check each built variant of ``shape`` against PyTorch, then time them all."""
    import torch
    from xdsl.parser import Parser

    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.dialects import make_context

    b, m, n, k = shape.dims
    if shape.kind == "linear":
        args = (torch.randn(1, m, k, device="cuda"), torch.randn(n, k, device="cuda"))
        reference = lambda: torch.nn.functional.linear(*args)  # noqa: E731
    else:
        args = (torch.randn(b, m, k, device="cuda"), torch.randn(b, k, n, device="cuda"))
        reference = lambda: torch.matmul(*args)  # noqa: E731
    want = reference()
    candidates = {"cublas": reference}
    for _, variant, text, compiled in built:
        program = CompiledProgram(Parser(make_context(), text).parse_module(), compiled=compiled)
        got = program(*args)[0]
        error = ((got - want).abs().max() / want.abs().max()).item()
        label = variant.label if variant is not None else PLANNED
        if error > RTOL:
            print(f"{shape.name} {label} WRONG (max rel err {error:.2e})", file=log)
            continue
        candidates[label] = lambda program=program: program(*args, poison=False)
    calls = max(2, min(10, int(3e-3 / (2 * b * m * n * k / 40e12))))
    timings = {v: t.median_us for v, t in time_graphs(candidates, rounds=7, calls=calls).items()}
    pick = planned_label(shape) or "the default schedule"
    print(f"== {shape.name} cublas {timings['cublas']:.1f} us; {PLANNED}: {pick}", file=log)
    for label, us in sorted(timings.items(), key=lambda kv: kv[1]):
        print(f"   {label:34s} {us:9.1f} us {timings['cublas'] / us:5.2f}x cuBLAS", file=log)
    log.flush()
    return timings


def sweep(shapes: list[Shape], splits, fills, out: Path, jobs: int, max_waste: float = 0.0) -> int:
    from deplodock.backends.cuda.driver import gpu_available

    work = [(s, v) for s in shapes for v in [None, *variants(s, splits, fills, max_waste)]]
    started = time.time()
    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        built = list(pool.map(build, work))
    print(f"{len(work)} variants of {len(shapes)} shapes built in {time.time() - started:.0f} s")
    if not gpu_available():
        print("deplodock sweep: no CUDA GPU on this machine: built and compiled, nothing timed")
        return 0
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    with open(out / "sweep.txt", "w") as log:
        for s in shapes:  # the file rewritten after each shape: a run cut short keeps them
            results[s.name] = time_shape(s, [b for b in built if b[0] == s], log)
            (out / "sweep.json").write_text(json.dumps(results, indent=1))
    print((out / "sweep.txt").read_text())
    return 0


def planned_label(shape: Shape) -> str | None:
    """The label of the variant ``plan_matmul`` picks for ``shape`` (None: no tile, the
    default schedule)."""
    from deplodock.passes.tile.schedule import matmul as plan

    b, m, n, k = shape.dims
    chosen = plan.matmul_plan(m, n, k, b, shape.mixed)
    if chosen is None:
        return None
    tile, splits = chosen
    candidate = next(
        c
        for c in plan.CANDIDATES
        if plan.tile_for(c, k, splits) == tile and c.mixed in (None, shape.mixed)
    )
    unroll = tile.bk if candidate.unrolled else 8
    resident = candidate.resident if candidate.capped else 1
    return Variant(
        (tile.tm, tile.tn, tile.threads_m, tile.threads_n, tile.bk), splits, unroll, True, resident
    ).label


LABEL = re.compile(r"(\d+)x(\d+)t(\d+)k(\d+)_S(\d+)(?:_u(\d+))?(?:_(mx|sb))?(_cap)?$")
PICK_WEIGHT = 10.0  # the fit cares more for picking right than for every estimate


def candidate_runs(shape: Shape, timings: dict[str, float]) -> dict[str, tuple[int, int]]:
    """The measured variants that ran as a candidate of the planner, as it builds it
    today (its K chunk, unroll, cap; two copies): label -> (index in CANDIDATES, splits).
    Session 5's labels (``128x64t128k8_S4``, no unroll or fill) count as built so."""
    from deplodock.passes.tile.schedule import matmul as plan

    b, m, n, k = shape.dims
    found = {}
    for label in timings:
        match = LABEL.match(label)
        if match is None:
            continue
        bm, bn, threads, bk, splits = map(int, match.groups()[:5])
        unroll, fill, cap = match.group(6), match.group(7), bool(match.group(8))
        for index, c in enumerate(plan.CANDIDATES):
            t = plan.tile_for(c, k, splits)
            if (t.block_m, t.block_n, t.threads, t.bk) != (bm, bn, threads, bk):
                continue
            if c.mixed not in (None, shape.mixed) or (b > 1 and not c.batched):
                continue
            if b == 1 and not c.single:
                continue
            mp, np_, _ = plan.padded_extents(t, m, n, k, splits)
            capped = c.capped and plan._fills(c, mp, np_, b * splits, _target())
            built = unroll is None or int(unroll) == (t.bk if c.unrolled else 8)
            priced = _estimate_us(shape, (index, splits)) is not None
            if cap == capped and built and fill != "sb" and priced:
                found[label] = (index, splits)
    return found


def _estimate_us(shape: Shape, run: tuple[int, int]) -> float | None:
    """The planner's estimate of a run (``candidate_seconds``; None: one it cannot pick)."""
    from deplodock.passes.tile.schedule import matmul as plan

    b, m, n, k = shape.dims
    priced = plan.candidate_seconds(plan.CANDIDATES[run[0]], m, n, k, b, run[1], _target())
    return 1e6 * priced[0] if priced is not None else None


def _measured(data: dict) -> list[tuple[Shape, dict[str, float], dict[str, tuple[int, int]]]]:
    rows = []
    for name, timings in data.items():
        shape = Shape.parse(SESSION_SHAPES.get(name, name))
        runs = candidate_runs(shape, timings)
        if runs:
            rows.append((shape, timings, runs))
    return rows


def _measured_all(paths: Sequence[Path]) -> list:
    """``_measured`` of each sweep file, one row a shape a file."""
    return [row for path in paths for row in _measured(json.loads(path.read_text()))]


def _picked_loss(rows) -> float:
    """Sum over shapes of log(picked / fastest), the pick ``plan_matmul``'s as the planner
    makes it today (``planned_label``): 0 when every pick is right. A pick that no sweep
    of the shape timed counts as its slowest variant: a fit must not look right by moving
    picks where nothing was measured (session 36: a fit of six sweeps moved 31 picks to
    untimed variants and showed 1.000)."""
    timed: dict[str, list[str]] = {}
    for shape, timings, _ in rows:
        timed.setdefault(shape.name, []).extend(timings)
    total = 0.0
    for shape, timings, runs in rows:
        fastest = min(timings[v] for v in runs)
        label = planned_label(shape) or PLANNED
        choices = [*runs, PLANNED] if PLANNED in timings else list(runs)
        picked = next((v for v in choices if _same_build(label, v)), None)
        if picked is not None:
            total += math.log(timings[picked] / fastest)
        elif not any(_same_build(label, v) for v in timed[shape.name]):
            total += math.log(max(timings[v] for v in runs) / fastest)
    return total


def _fit_error(rows) -> float:
    squares = sum(
        math.log(_estimate_us(shape, runs[v]) / timings[v]) ** 2
        for shape, timings, runs in rows
        for v in runs
    )
    return squares + PICK_WEIGHT * _picked_loss(rows)


def fit(rows) -> None:
    """Coordinate descent on the cost model's constants (each candidate's efficiencies,
    ``K_OVERHEAD``, ``HBM_BYTES_PER_S``, ``K_EDGE_COST``: multiplicative steps, shrinking),
    in this process only; prints the values to put in ``passes/tile/schedule/matmul.py``."""
    import dataclasses

    from deplodock.passes.tile.schedule import matmul as plan

    def knobs():
        for index, c in enumerate(plan.CANDIDATES):
            for i in range(len(c.efficiency)):
                yield ("eff", index, i)
        yield ("K_OVERHEAD",)
        yield ("HBM_BYTES_PER_S",)
        yield ("K_EDGE_COST",)

    def get(knob):
        if knob[0] == "eff":
            return plan.CANDIDATES[knob[1]].efficiency[knob[2]]
        return getattr(plan, knob[0])

    def put(knob, value):
        if knob[0] != "eff":
            setattr(plan, knob[0], value)
            return
        c = plan.CANDIDATES[knob[1]]
        values = list(c.efficiency)
        values[knob[2]] = value
        candidates = list(plan.CANDIDATES)
        candidates[knob[1]] = dataclasses.replace(c, efficiency=tuple(values))
        plan.CANDIDATES = tuple(candidates)

    step, best = 0.2, _fit_error(rows)
    while step > 0.005:
        improved = False
        for knob in knobs():
            for factor in (1 + step, 1 / (1 + step)):
                old = get(knob)
                put(knob, old * factor)
                error = _fit_error(rows)
                if error < best - 1e-9:
                    best, improved = error, True
                else:
                    put(knob, old)
        if not improved:
            step /= 2
    for c in plan.CANDIDATES:
        print(f"{c.tile}: efficiency ({', '.join(f'{v:.2f}' for v in c.efficiency)})")
    print(f"K_OVERHEAD = {plan.K_OVERHEAD:.0f}; HBM_BYTES_PER_S = {plan.HBM_BYTES_PER_S:.2e}")
    print(f"K_EDGE_COST = {plan.K_EDGE_COST:.3f}")
    squares = best - PICK_WEIGHT * _picked_loss(rows)
    print(f"rms log error {math.sqrt(squares / sum(len(r[2]) for r in rows)):.3f}")


def _same_build(a: str, b: str) -> bool:
    """Whether two labels name one build: equal, or one the other with options added
    (session 5's labels carry no unroll or fill); ``_S1`` is not a prefix of ``_S16``."""
    return a == b or a.startswith(b + "_") or b.startswith(a + "_")


def check(paths: Sequence[Path], refit: bool = False, holdout: Sequence[Path] = ()) -> int:
    """Per shape of each sweep, the variant ``plan_matmul`` picks against the fastest
    measured variant built as the compiler builds its tiles (``candidate_runs``); with
    ``refit``, the cost model fitted to the data of ``paths`` first (``fit``). The sweeps
    of ``holdout`` are checked, not fitted: how the model does on shapes outside the fit,
    with a geomean of their own."""
    rows = _measured_all(paths)
    if refit:
        fit(rows)
    _report(rows, "")
    if holdout:
        print("-- held out of the fit:")
        _report(_measured_all(holdout), " (held out)")
    return 0


def _report(rows, what: str) -> None:
    """One line a shape (the pick, its time, the fastest, against cuBLAS) and the geomean
    of fastest / picked."""
    total, count, unmeasured = 0.0, 0, 0
    for shape, timings, runs in rows:
        pick = planned_label(shape) or PLANNED  # no tile: the default schedule, as built
        best = min(runs, key=lambda v: timings[v])
        choices = [*runs, PLANNED] if PLANNED in timings else list(runs)
        picked = next((v for v in choices if _same_build(pick, v)), None)
        if picked is None:
            print(f"{shape.name:24s} picked {pick} (not in the sweep)")
            unmeasured += 1
            continue
        total += math.log(timings[best] / timings[picked])
        count += 1
        print(
            f"{shape.name:24s} picked {picked:30s} {timings[picked]:8.1f} us  fastest "
            f"{best:30s} {timings[best]:8.1f}  {timings['cublas'] / timings[picked]:.2f}x cuBLAS"
        )
    if count:
        print(f"fastest / picked, geomean over {count} shapes{what}: {math.exp(total / count):.3f}")
    if unmeasured:  # a refit that sends picks to untimed variants is not judged by the geomean
        print(f"picks no sweep timed{what}: {unmeasured} of {count + unmeasured} shapes")


SESSION_SHAPES = {  # the names sessions 5 and 6 gave their shapes
    "tl_down_S32": "linear:32x2048x5632", "tl_gu_S32": "linear:32x5632x2048",
    "tl_q_S128": "linear:128x2048x2048", "tl_gu_S128": "linear:128x5632x2048",
    "tl_down_S128": "linear:128x2048x5632", "tl_q_S512": "linear:512x2048x2048",
    "tl_kv_S512": "linear:512x256x2048", "tl_gu_S512": "linear:512x5632x2048",
    "tl_down_S512": "linear:512x2048x5632", "qw_gu_S32": "linear:32x18944x3584",
    "qw_down_S32": "linear:32x3584x18944", "qw_o_S128": "linear:128x3584x3584",
    "qw_down_S128": "linear:128x3584x18944", "qw_gu_S128": "linear:128x18944x3584",
    "qw_o_S512": "linear:512x3584x3584", "qw_down_S512": "linear:512x3584x18944",
    "sq_lin_4096": "linear:4096x4096x4096", "sq_mm_1024": "matmul:1x1024x1024x1024",
    "sq_mm_2048": "matmul:1x2048x2048x2048", "sq_mm_4096": "matmul:1x4096x4096x4096",
    "tl_pv_S128": "matmul:32x128x64x128", "tl_pv_S512": "matmul:32x512x64x512",
    "qw_pv_S128": "matmul:28x128x128x128", "qw_pv_S512": "matmul:28x512x128x512",
}  # fmt: skip


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deplodock.bench.sweep", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--shape", action="append", help="linear:MxNxK or matmul:BxMxNxK (repeatable)"
    )
    parser.add_argument(
        "--splits", type=_ints, default=(1, 2, 3, 4, 6, 8, 16), help="K splits to try"
    )
    parser.add_argument("--fills", default="planned", help="planned and/or single, comma-separated")
    parser.add_argument("--jobs", type=int, default=15, help="build processes")
    parser.add_argument(
        "--max-waste",
        type=float,
        default=0.0,
        help="padded tiles up to this many times the real work (default: the planner's cap)",
    )
    parser.add_argument("--out", type=Path, default=Path("sweep-results"))
    parser.add_argument(
        "--check",
        type=Path,
        action="append",
        metavar="SWEEP_JSON",
        help="check the planner against a sweep (repeatable: several sweeps' shapes)",
    )
    parser.add_argument("--fit", action="store_true", help="with --check: fit the model first")
    parser.add_argument(
        "--holdout",
        type=Path,
        action="append",
        default=[],
        metavar="SWEEP_JSON",
        help="with --check: a sweep checked after the fit, not fitted (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.check:
        return check(args.check, args.fit, args.holdout)
    if args.holdout or args.fit:
        parser.error("--fit and --holdout go with --check")
    fills = tuple(args.fills.split(","))
    if set(fills) - {"planned", "single"}:
        parser.error(f"--fills takes planned and single, got {args.fills}")
    try:
        shapes = [Shape.parse(s) for s in (args.shape or DEFAULT_SHAPES)]
    except ValueError as e:
        parser.error(str(e))
    return sweep(shapes, args.splits, fills, args.out, args.jobs, args.max_waste)


if __name__ == "__main__":
    sys.exit(main())
