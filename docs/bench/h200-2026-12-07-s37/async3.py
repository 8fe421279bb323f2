"""Session 37: run a deplodock command with every K loop that cp.async can fill (its
transposed slabs too, 4 bytes a copy, consecutive threads on consecutive elements) filled
three buffers deep (``fill-k-loop{narrow=true buffers=3}``: two chunks in flight, one
barrier an iteration), so one build times it against the planner's register prefetch.

    python3 docs/bench/h200-2026-12-07-s37/async3.py bench --filter ...
"""

import dataclasses
import sys

from deplodock.passes.tile import fill_k_loop

_plan = fill_k_loop.plan_fill


def _async3(kernel, for_op, stages, target, options):
    return _plan(kernel, for_op, stages, target, dataclasses.replace(options, narrow=True, buffers=3))


fill_k_loop.plan_fill = _async3

from deplodock.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
