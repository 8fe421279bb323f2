"""Check what the matmul cost model picks against session 6's sweep (no GPU needed).

    python docs/bench/h200-2026-11-30-s6/check_cost_model.py [sweep.json]

For each shape of the sweep (``sweep.py``, run on the H200): the variant the cost model
(``deplodock.passes.tile.matmul_tile``) picks, as the compiler now builds it (K chunks
unrolled as the candidate says, double-buffered, capped as its candidate is), against the
fastest of the variants built that way, and against cuBLAS; then the geomean of
fastest/picked.
"""

import json
import math
import sys
from pathlib import Path

from deplodock.passes.tile import matmul_tile as mt

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from sweep import MIXED, shape_of  # noqa: E402


def label(c: mt.Candidate, splits: int) -> str:
    t = c.tile
    block = f"{t.block_m}x{t.block_n}t{t.threads}k{t.bk}"
    unroll = t.bk if c.unrolled else 8
    return f"{block}_S{splits}_u{unroll}_mx{'_cap' if c.capped else ''}"


def built_today(sweep_timings: dict[str, float], name: str) -> dict[str, float]:
    """The measured variants that match a candidate of the model as it builds them now."""
    batch, m, n, k = shape_of(name)
    mixed = name in MIXED
    found = {}
    for c in mt.CANDIDATES:
        if c.mixed not in (None, mixed) or (batch > 1 and not c.batched):
            continue
        for splits in (1, 2, 4, 8, 16):
            variant = label(c, splits)
            if variant in sweep_timings and mt._fills(c, m, n, batch * splits):
                found[variant] = sweep_timings[variant]
    return found


def main(path: str) -> None:
    sweep = json.loads(Path(path).read_text())
    total, count = 0.0, 0
    for name, timings in sweep.items():
        batch, m, n, k = shape_of(name)
        plan = mt.matmul_plan(m, n, k, batch, name in MIXED)
        candidate = next(
            c for c in mt.CANDIDATES if c.tile == plan[0] and c.mixed in (None, name in MIXED)
        )
        pick = label(candidate, plan[1])
        today = built_today(timings, name)
        best = min(today, key=today.get)
        picked = timings.get(pick)
        cublas = timings["cublas"]
        if picked is None:
            print(f"{name:13s} picked {pick} (not in the sweep); fastest {best} {today[best]:.1f}")
            continue
        total += math.log(today[best] / picked)
        count += 1
        print(
            f"{name:13s} picked {pick:30s} {picked:8.1f} us  fastest {best:30s}"
            f" {today[best]:8.1f}  cuBLAS {cublas:8.1f}  ratio {cublas / picked:.3f}"
        )
    print(f"picked / fastest, geomean over {count} shapes: {math.exp(total / count):.3f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE / "sweep.json"))
