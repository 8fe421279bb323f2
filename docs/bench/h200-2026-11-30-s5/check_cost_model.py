"""Fit the matmul cost model to a measured sweep, and check what it picks.

    python docs/bench/h200-2026-11-30-s5/check_cost_model.py [sweep.json] [--fit]

For each shape of the sweep (``sweep.py``, run on the H200), the variant the cost model
(``deplodock.passes.tile.matmul_tile``) estimates cheapest among the measured ones with
the candidates' own K chunk, against the fastest measured one; then the geomean of
fastest/picked over the shapes. ``--fit`` first fits each candidate's ``efficiency``,
``K_OVERHEAD`` and ``HBM_BYTES_PER_S`` to the sweep (least squares on log time plus the
picks' loss, coordinate descent) and prints the values to put in ``matmul_tile.py``.
"""

import dataclasses
import json
import math
import re
import sys
from pathlib import Path

from deplodock.passes.tile import matmul_tile as mt

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from sweep import capped, shape_of  # noqa: E402

PICK_WEIGHT = 10.0  # the fit cares more for picking right than for every estimate
VARIANT = re.compile(r"(\d+)x(\d+)t(\d+)k(\d+)_S(\d+)")


def candidate_of(variant: str, name: str) -> tuple[int, int] | None:
    """(index in ``CANDIDATES``, splits) of the candidate a variant like
    ``128x64t128k8_S4`` of shape ``name`` ran as; None when it ran as none (another K
    chunk, or capped where the candidate is not)."""
    bm, bn, threads, bk, splits = map(int, VARIANT.match(variant).groups())
    m, n, _ = shape_of(name)
    for index, c in enumerate(mt.CANDIDATES):
        t = c.tile
        if (t.block_m, t.block_n, t.threads, t.bk) == (bm, bn, threads, bk):
            if c.capped == capped(t, m, n, splits):
                return index, splits
    return None


def measured_candidates(sweep: dict) -> dict[str, dict[str, float]]:
    return {
        name: {v: us for v, us in timings.items() if v != "cublas" and candidate_of(v, name)}
        for name, timings in sweep.items()
    }


def estimate_us(variant: str, name: str) -> float:
    index, splits = candidate_of(variant, name)
    return 1e6 * mt.estimate_seconds(mt.CANDIDATES[index], *shape_of(name), 1, splits)


def picked_loss(data: dict[str, dict[str, float]]) -> float:
    """Sum over shapes of log(picked / fastest) measured time: 0 when every pick is right."""
    total = 0.0
    for name, measured in data.items():
        pick = min(measured, key=lambda variant: estimate_us(variant, name))
        total += math.log(measured[pick] / min(measured.values()))
    return total


def log_error(data: dict[str, dict[str, float]]) -> float:
    """Squared log error of every estimate, plus the picks' loss weighted ``PICK_WEIGHT``."""
    squares = sum(
        math.log(estimate_us(v, name) / us) ** 2
        for name, rows in data.items()
        for v, us in rows.items()
    )
    return squares + PICK_WEIGHT * picked_loss(data)


def fit(data: dict[str, dict[str, float]]) -> None:
    """Coordinate descent on the model's constants (multiplicative steps, shrinking)."""

    def knobs():
        for index, c in enumerate(mt.CANDIDATES):
            for i in range(len(c.efficiency)):
                yield ("eff", index, i)
        yield ("K_OVERHEAD",)
        yield ("HBM_BYTES_PER_S",)

    def get(knob):
        if knob[0] == "eff":
            return mt.CANDIDATES[knob[1]].efficiency[knob[2]]
        return getattr(mt, knob[0])

    def put(knob, value):
        if knob[0] == "eff":
            c = mt.CANDIDATES[knob[1]]
            values = list(c.efficiency)
            values[knob[2]] = value
            candidates = list(mt.CANDIDATES)
            candidates[knob[1]] = dataclasses.replace(c, efficiency=tuple(values))
            mt.CANDIDATES = tuple(candidates)
        else:
            setattr(mt, knob[0], value)

    step = 0.2
    best = log_error(data)
    while step > 0.005:
        improved = False
        for knob in knobs():
            for factor in (1 + step, 1 / (1 + step)):
                old = get(knob)
                put(knob, old * factor)
                error = log_error(data)
                if error < best - 1e-9:
                    best, improved = error, True
                else:
                    put(knob, old)
        if not improved:
            step /= 2
    for c in mt.CANDIDATES:
        print(f"{c.tile}: efficiency ({', '.join(f'{v:.2f}' for v in c.efficiency)})")
    print(f"K_OVERHEAD = {mt.K_OVERHEAD:.0f}; HBM_BYTES_PER_S = {mt.HBM_BYTES_PER_S:.2e}")
    squares = best - PICK_WEIGHT * picked_loss(data)
    print(f"rms log error {math.sqrt(squares / sum(len(r) for r in data.values())):.3f}")


def main(path: str, refit: bool) -> None:
    sweep = json.loads(Path(path).read_text())
    data = measured_candidates(sweep)
    if refit:
        fit(data)
    total = 0.0
    for name, measured in data.items():
        pick = min(measured, key=lambda variant: estimate_us(variant, name))
        best = min(measured, key=measured.get)
        everything = {v: us for v, us in sweep[name].items() if v != "cublas"}
        overall = min(everything, key=everything.get)
        total += math.log(measured[best] / measured[pick])
        cublas = sweep[name]["cublas"]
        print(
            f"{name:13s} picked {pick:20s} {measured[pick]:8.1f} us"
            f" ({estimate_us(pick, name):7.1f} est)  fastest {best:20s} {measured[best]:8.1f}"
            f"  any {overall:20s} {everything[overall]:8.1f}  cuBLAS {cublas:8.1f}"
            f"  ratio {cublas / measured[pick]:.2f}"
        )
    geomean = math.exp(total / len(data))
    print(f"picked / fastest, geomean over {len(data)} shapes: {geomean:.3f}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--fit"]
    main(args[0] if args else str(HERE / "sweep.json"), "--fit" in sys.argv)
