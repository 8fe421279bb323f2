"""Session 32: a thread tile of 16 x 8 (128 outputs a thread, cuBLAS's 128 x 128 tile in
128 threads: ``sm80_xmma_gemm_..._tilesize128x128x8_..._warpsize2x2x1``, which eager runs
for TinyLlama's gate/up/down at S=512) against the planner's 8 x 8 tiles on the
projections of the decoder layers at S=512, where deplodock's matmuls sit at 0.80-0.85x
cuBLAS (the layers' remaining gap to torch.compile). NVRTC 13.0 on the CPU machine: 217
registers (16 x 8, chunk 8), 225 (8 x 16), 243 (8 x 16, chunk 16), no spills: 2 blocks an
SM. Variants through ``register-tile{tm tn threads_m threads_n bk}``, beside eager
(cuBLAS) and torch.compile in one run (``deplodock.bench.variants``); each also
unsplit (``split-matmul-k{splits=1}``: the planner's K splits are kept otherwise).

    python3 docs/bench/h200-2026-12-06-s32/bigtile.py [CASE ...]
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
    "tinyllama_q_S512": _linear(512, 2048, 2048),
    "qwen_o_S512": _linear(512, 3584, 3584),
    "qwen_gate_S512": _linear(512, 18944, 3584),
    "qwen_down_S512": _linear(512, 3584, 18944),
    "square_4096": _linear(4096, 4096, 4096),
}


def variants(name: str):
    from deplodock.passes.tile.register_tile import RegisterTile
    from deplodock.passes.tile.split_matmul_k import SplitMatmulK

    out = {"default": {}}
    for tm, tn, bk in ((16, 8, 8), (8, 16, 8), (16, 8, 16), (8, 16, 16)):
        threads_m, threads_n = 128 // tm, 128 // tn
        rt = RegisterTile(tm=tm, tn=tn, threads_m=threads_m, threads_n=threads_n, bk=bk)
        out[f"t{tm}x{tn}k{bk}"] = {"register-tile": rt}
        out[f"t{tm}x{tn}k{bk}s1"] = {"register-tile": rt, "split-matmul-k": SplitMatmulK(1)}
    return out


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
