"""Session 20, call 3: block tiles outside the planner's candidates, on the projection
shapes where the layers and the whole TinyLlama lose to cuBLAS (which runs 64 x 256 and
128 x 128 tiles of 128 threads there): 64 x 256 and 256 x 64 in 256 threads (8 x 8 a
thread), 64 x 256 and 128 x 128 in 128 threads (8 x 16 a thread), beside the planner's
pick, the 128 x 128 / 256-thread candidate and cuBLAS; each checked against PyTorch,
then timed (``deplodock.bench.sweep``'s build and time_shape).

    python3 docs/bench/h200-2026-12-04-s20/tiles.py OUT_DIR
"""

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from deplodock.bench.sweep import Shape, Variant, build, time_shape

SHAPES = [
    "linear:128x32000x2048",  # TinyLlama lm_head at S=128
    "linear:128x5632x2048",  # gate/up S=128
    "linear:128x2048x5632",  # down S=128
    "linear:512x5632x2048",  # gate/up S=512
    "linear:512x2048x5632",  # down S=512
    "linear:512x2048x2048",  # q/o S=512
]
TILES = [
    (8, 8, 16, 16, 8),  # 128 x 128, 256 threads: the candidate
    (8, 8, 8, 32, 8),  # 64 x 256, 256 threads
    (8, 8, 8, 32, 16),
    (8, 8, 32, 8, 8),  # 256 x 64, 256 threads
    (8, 8, 32, 8, 16),
    (8, 16, 8, 16, 8),  # 64 x 256, 128 threads, 8 x 16 a thread
    (8, 16, 16, 8, 8),  # 128 x 128, 128 threads, 8 x 16 a thread
]
SPLITS = (1, 2, 4)


def fits(shape: Shape, tile, splits: int) -> bool:
    tm, tn, thm, thn, bk = tile
    part = shape.k // splits
    return (
        shape.m % (tm * thm) == 0
        and shape.n % (tn * thn) == 0
        and shape.k % splits == 0
        and part % bk == 0
        and part >= 2 * bk
    )


def main(out: Path) -> None:
    import torch

    shapes = [Shape.parse(s) for s in SHAPES]
    work = [
        (s, v)
        for s in shapes
        for v in [None]
        + [Variant(t, sp, 8, True, 1) for t in TILES for sp in SPLITS if fits(s, t, sp)]
    ]
    started = time.time()
    with ProcessPoolExecutor(15, mp_context=get_context("spawn")) as pool:
        built = list(pool.map(build, work))
    print(f"{len(work)} variants built in {time.time() - started:.0f} s", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "tiles.txt", "w") as log:
        results = {s.name: time_shape(s, [b for b in built if b[0] == s], log) for s in shapes}
    (out / "tiles.json").write_text(json.dumps(results, indent=1))
    print((out / "tiles.txt").read_text())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
