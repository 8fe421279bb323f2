"""Session 39: run a deplodock command with ``tile-walk`` on (rows ``TW_ROWS``, default 64;
keys a chunk ``TW_CHUNK``, default 64; ``TW_ROWS=0`` keeps the planner's choice), and its
two inner loops unrolled ``TW_UNROLL`` deep (default 0: NVCC decides), so one build times
a variant of the register-tiled attention walk against another.

    DEPLODOCK_CACHE_DIR=/tmp/tw python3 docs/bench/h200-2026-12-07-s39/tilewalk.py bench ..
"""

import dataclasses
import os
import sys

from deplodock.passes.tile import tile_walk

_apply = tile_walk.TileWalk.apply


def _on(self, ctx, op):
    rows = self.rows or int(os.environ.get("TW_ROWS", "64"))
    chunk = int(os.environ.get("TW_CHUNK", str(self.chunk)))
    unroll = int(os.environ.get("TW_UNROLL", str(self.unroll)))
    merge = os.environ.get("TW_MERGE", self.merge)  # session 40: branch or select
    changed = dataclasses.replace(self, rows=rows, chunk=chunk, unroll=unroll, merge=merge)
    return _apply(changed, ctx, op)


tile_walk.TileWalk.apply = _on

from deplodock.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
