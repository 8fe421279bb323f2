"""Session 34: K splits that are not powers of two. The planner tries splits 1, 2, 4, 8 ..;
wave quantisation favours others: TinyLlama's gate at S=512 in the 16 x 8 thread tile
(cuBLAS's 128 x 128 tile in 128 threads) is 176 blocks for 264 slots (two an SM), 379 us
unsplit (session 32) where the cost model prices a split of 3 (528 blocks: two full rounds)
at 307 us beside the planner's 8 x 8 tile at 306 measured. Forced through
``split-matmul-k{splits=N}`` and ``register-tile{..}`` (K padded with zeros to the split's
chunks where it does not divide), beside eager (cuBLAS) and torch.compile in one run.

    python3 docs/bench/h200-2026-12-07-s34/splits.py [CASE ...]
"""

import sys
import warnings

import torch

warnings.filterwarnings("ignore")
F = torch.nn.functional


def _linear(m: int, n: int, k: int):
    return F.linear, [lambda: torch.randn(1, m, k), lambda: torch.randn(n, k) / k**0.5]


CASES = {
    "tinyllama_gate_S512": _linear(512, 5632, 2048),
    "tinyllama_down_S512": _linear(512, 2048, 5632),
    "tinyllama_gate_S128": _linear(128, 5632, 2048),
    "tinyllama_q_S512": _linear(512, 2048, 2048),
}

SPLITS = {
    "tinyllama_gate_S512": ((16, 8, 8, 8, 16, (1, 3, 6)), (0, 0, 0, 0, 0, (3,))),
    "tinyllama_down_S512": ((16, 8, 8, 8, 16, (6,)), (0, 0, 0, 0, 0, (3,))),
    "tinyllama_gate_S128": ((8, 8, 8, 16, 8, (3,)), (0, 0, 0, 0, 0, (3, 6))),
    "tinyllama_q_S512": ((16, 8, 8, 8, 16, (3, 6)), (0, 0, 0, 0, 0, (3,))),
}
"""Per case: (tm, tn, bk, threads_m, threads_n, splits); tm 0: the planner's tile, its
split count forced."""


def variants(name: str):
    from deplodock.passes.tile.register_tile import RegisterTile
    from deplodock.passes.tile.split_matmul_k import SplitMatmulK

    out = {"default": {}}
    for tm, tn, bk, threads_m, threads_n, splits in SPLITS[name]:
        for s in splits:
            options = {"split-matmul-k": SplitMatmulK(s)}
            if tm:
                rt = RegisterTile(tm=tm, tn=tn, threads_m=threads_m, threads_n=threads_n, bk=bk)
                options["register-tile"] = rt
            out[f"t{tm}x{tn}k{bk}s{s}" if tm else f"planned_s{s}"] = options
    return out


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
