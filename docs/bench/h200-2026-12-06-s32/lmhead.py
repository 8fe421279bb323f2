"""Session 32: the LM head. Whole TinyLlama at S=128 sits at 0.97x torch.compile (session
20, H200); its LM head (x[128, 2048] @ w[32000, 2048].T, one kernel of 250 blocks of the
128 x 128 tile) took 529.7 us of the model's 8436 where its fp32 roofline is 349.5 us and
the planner's estimate 384 us: the largest single miss of the cost model in the model.
Variants: every unbatched 8 x 8 candidate of ``passes/tile/schedule/matmul.py`` (each
tile, chunk and residency cap as its candidate has it), the 128 x 128 tile split in K
2 and 4 ways, and the 16 x 8 thread tile (``bigtile.py``), beside eager (cuBLAS) and
torch.compile in one run (``deplodock.bench.variants``); the gate at S=128 too (the
model's largest kernel family, 78 us a launch against torch.compile's 75; each tile
with the K splits the planner gives it).

    python3 docs/bench/h200-2026-12-06-s32/lmhead.py [CASE ...]
"""

import os
import sys
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bigtile import _linear  # noqa: E402  (x[1, M, K] @ w[N, K].T, as there)

CASES = {
    "tinyllama_lmhead_S128": _linear(128, 32000, 2048),
    "tinyllama_lmhead_S512": _linear(512, 32000, 2048),
    "qwen_lmhead_S128": _linear(128, 152064, 3584),
    "tinyllama_gate_S128": _linear(128, 5632, 2048),
}

# (label, tm, tn, threads_m, threads_n, bk, resident): the unbatched 8 x 8 candidates
TILES = (
    ("128x128k8", 8, 8, 16, 16, 8, 0),
    ("128x64k16", 8, 8, 16, 8, 16, 0),
    ("64x128k16", 8, 8, 8, 16, 16, 0),
    ("128x64k8c4", 8, 8, 16, 8, 8, 4),
    ("64x128k8c4", 8, 8, 8, 16, 8, 4),
    ("128x128t16x8", 16, 8, 8, 16, 8, 0),
)


def variants(name: str):
    from deplodock.passes.tile.register_tile import RegisterTile
    from deplodock.passes.tile.split_matmul_k import SplitMatmulK

    out = {"default": {}}
    for label, tm, tn, threads_m, threads_n, bk, resident in TILES:
        rt = RegisterTile(tm, tn, threads_m, threads_n, bk, resident)
        if "gate" in name:  # the K splits the planner gives each tile
            out[label] = {"register-tile": rt}
            continue
        out[label] = {"register-tile": rt, "split-matmul-k": SplitMatmulK(1)}
        if label == "128x128k8":
            for s in (2, 4):
                out[f"{label}s{s}"] = {"register-tile": rt, "split-matmul-k": SplitMatmulK(s)}
    return out


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
