"""How well ``deplodock.passes.tile.matmul_tile`` picks from a measured sweep.

    python docs/bench/h200-2026-11-30-s4/matmul-sweep/check_cost_model.py [sweep.json]

For each shape of the sweep (``sweep.py``, run on the H200: every block tile x K split of
the generated kernel for ``x @ w.T``), the variant the cost model estimates cheapest
against the fastest measured one; then the geomean of best/picked over the shapes.

It checks the cost model of session 4 (fa68a74: ``git worktree add /tmp/s4 fa68a74`` and
run it there). Session 5 changed the candidates (a ``64x128k8`` variant here is a 4 x 8
thread tile, there an 8 x 8 one), so the current model's record is
``docs/bench/h200-2026-11-30-s5/check_cost_model.py`` with that session's sweep.
"""

import json
import math
import re
import sys
from pathlib import Path

from deplodock.passes.tile import matmul_tile as mt

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from sweep import SHAPES  # noqa: E402


def estimate(variant: str, m: int, n: int, k: int) -> float:
    """The cost model's seconds for a variant named like ``128x128k8_S4``."""
    bm, bn, _, splits = map(int, re.match(r"(\d+)x(\d+)k(\d+)_S(\d+)", variant).groups())
    tile = next(c for c in mt.CANDIDATES if (c.block_m, c.block_n) == (bm, bn))
    return mt.estimate_seconds(tile, m, n, k, 1, splits)


def main(path: str) -> None:
    if not hasattr(mt, "EFFICIENCY"):
        sys.exit("this checks session 4's cost model (fa68a74); see the module docstring")
    sweep = json.loads(Path(path).read_text())
    total = 0.0
    for name, shape in SHAPES.items():
        measured = {v: us for v, us in sweep[name].items() if v != "cublas"}
        pick = min(measured, key=lambda variant: estimate(variant, *shape))
        best = min(measured, key=measured.get)
        total += math.log(measured[best] / measured[pick])
        print(
            f"{name:14s} picked {pick:16s} {measured[pick]:8.1f} us   fastest {best:16s} "
            f"{measured[best]:8.1f} us   cuBLAS {sweep[name]['cublas']:8.1f} us"
        )
    geomean = math.exp(total / len(SHAPES))
    print(f"picked / fastest, geomean over {len(SHAPES)} shapes: {geomean:.3f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE / "sweep.json"))
