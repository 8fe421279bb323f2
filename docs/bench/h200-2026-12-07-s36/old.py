"""Session 36: run a deplodock command with the cost model's constants as they were before
this session's change (the 16 x 8 tile's efficiency at two blocks an SM 0.913, not 0.95;
``K_EDGE_COST`` 1.05, not 1.0), so one build times the planner's picks before and after.

    python3 docs/bench/h200-2026-12-07-s36/old.py bench --filter ...   # the CLI, old picks
    python3 docs/bench/h200-2026-12-07-s36/old.py path/to/script.py ARGS   # a script
"""

import dataclasses
import runpy
import sys

from deplodock.passes.tile.schedule import matmul as plan

plan.K_EDGE_COST = 1.05
plan.CANDIDATES = tuple(
    dataclasses.replace(c, efficiency=(0.65, 0.913))
    if c.tile == plan.MatmulTile(16, 8, 8, 16, 8)
    else c
    for c in plan.CANDIDATES
)

if sys.argv[1].endswith(".py"):
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
else:
    from deplodock.cli import main

    sys.exit(main(sys.argv[1:]))
