"""Session 38: run a deplodock command with every register-prefetch K loop's loads of the
next chunk each under its own branch (``materialize{branched_loads=true}``: ptxas then
keeps them at the top of the chunk), so one build times it against the planner's kernels.

    DEPLODOCK_CACHE_DIR=/tmp/b python3 docs/bench/h200-2026-12-07-s38/pin/branched.py bench ..
"""

import sys

from deplodock.passes.kernel import materialize

_lower = materialize.lower_buffered


def _branched(for_op, stages, tid, threads, mode, rewriter, branched=False):
    return _lower(for_op, stages, tid, threads, mode, rewriter, True)


materialize.lower_buffered = _branched

from deplodock.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
