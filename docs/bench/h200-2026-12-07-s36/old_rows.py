"""Session 36: run a deplodock command with rows staged and kept two-pass as before this
session (a large slab only where two blocks an SM fit, the online loop for every row of
16384 or more), so one build times the rule before and after.

    python3 docs/bench/h200-2026-12-07-s36/old_rows.py bench --filter ...
"""

import sys

from deplodock.passes.loop import online_softmax
from deplodock.passes.tile import stage_inputs

_budget = stage_inputs.large_slab_budget
stage_inputs.large_slab_budget = lambda target, element, blocks=2: _budget(target, element, 2)
online_softmax.staged_alone = lambda extent, element, target: False

if sys.argv[1].endswith(".py"):
    import runpy

    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
else:
    from deplodock.cli import main

    sys.exit(main(sys.argv[1:]))
