"""Session 37: run a deplodock command with the 16 x 8 tile (128 x 128 in 128 threads) taking
a K chunk of 16 instead of 8 (half the barriers and refills a K walk; 235 registers, 33 KB
of shared memory, no spill under NVRTC 13), so one build times both chunks.

    python3 docs/bench/h200-2026-12-07-s37/bk16.py bench --filter ...
"""

import dataclasses
import sys

from deplodock.passes.tile.schedule import matmul as plan

WIDE = plan.MatmulTile(16, 8, 8, 16, 8)
plan.CANDIDATES = tuple(
    dataclasses.replace(c, tile=dataclasses.replace(c.tile, bk=16)) if c.tile == WIDE else c
    for c in plan.CANDIDATES
)

from deplodock.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
