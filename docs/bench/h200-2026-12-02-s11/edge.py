"""Edge tiles on the H200: irregular matmuls beside the divisible size next to them.

    python3 docs/bench/h200-2026-12-02-s11/edge.py [--no-cap] [CASE ...]

Each case is compiled with ``deplodock.compile`` (fp32, TF32 off), checked against
torch.matmul (cuBLAS), and timed beside it with ``time_graphs``; one line a case: the
times, the ratio, TFLOP/s. ``--no-cap``: the edge-tile kernels without the residency
``plan_matmul`` asks for them (``__launch_bounds__`` minimum 1), for the comparison.
"""

import sys
import warnings

import torch

warnings.filterwarnings("ignore")
torch.backends.cuda.matmul.allow_tf32 = False

CASES = {  # name: (M, K, N, linear: x @ W.T)
    "prime": (3001, 3011, 2999, False),
    "aligned": (3000, 3012, 3000, False),  # no tile divides it, but rows keep 16 bytes
    "even": (3072, 3072, 3072, False),
    "lin-odd": (2047, 4093, 11003, True),
    "lin-even": (2048, 4096, 11008, True),
    "odd-k": (3072, 3071, 3072, False),  # only K ragged
}


class MM(torch.nn.Module):
    def __init__(self, linear):
        super().__init__()
        self.linear = linear

    def forward(self, a, b):
        return torch.nn.functional.linear(a, b) if self.linear else a @ b


def no_cap():
    from deplodock.passes.tile import register_tile, split_matmul_k
    from deplodock.passes.tile.schedule import matmul

    original = matmul.plan_matmul

    def plan(*args, **kwargs):
        s = original(*args, **kwargs)
        if s is None:
            return s
        tile = matmul.MatmulTile(s.tm.data, s.tn.data, *s.block_threads, s.k_chunk.data)
        return s.replace(resident=matmul.min_blocks_per_sm(tile))

    for module in (matmul, register_tile, split_matmul_k):
        module.plan_matmul = plan


def main(argv):
    import deplodock
    from deplodock.backends.cuda.timing import time_graphs

    if "--no-cap" in argv:
        argv = [a for a in argv if a != "--no-cap"]
        no_cap()
    for name in argv or list(CASES):
        m, k, n, linear = CASES[name]
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(n, k, device="cuda") if linear else torch.randn(k, n, device="cuda")
        module = MM(linear)
        ours = deplodock.compile(module, a, b, cache=False)
        got, want = ours(a, b), module(a, b)
        err = ((got - want).abs().max() / want.abs().max()).item()
        t = time_graphs({"deplodock": lambda: ours(a, b), "cublas": lambda: module(a, b)},
                        rounds=10, calls=5)
        us, cu = t["deplodock"].median_us, t["cublas"].median_us
        tf = 2 * m * n * k / (us * 1e-6) / 1e12
        print(f"{name} {m}x{k}x{n}: deplodock {us:.1f} us, cuBLAS {cu:.1f} us, "
              f"{cu / us:.2f}x cuBLAS, {tf:.1f} TFLOP/s, err {err:.1e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
