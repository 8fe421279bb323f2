"""Fused attention on the H200: ``softmax-sum`` (one kernel, the scores never stored)
against the four kernels before it (``softmax-sum{fold=false}``), and the threads a row's
walk is dealt over (``cooperative-reduce{threads=N}``), beside eager and torch.compile in
one run (``deplodock.bench.variants``: each variant checked against eager at 1e-5 of the
largest output, then timed).

    python3 docs/bench/h200-2026-12-03-s14/attention.py [CASE ...]      # default: all
"""

import sys
import warnings

import torch

warnings.filterwarnings("ignore")

F = torch.nn.functional


def _sdpa(hq, hkv, sq, sk, d, causal):
    fn = lambda q, k, v: F.scaled_dot_product_attention(  # noqa: E731
        q, k, v, is_causal=causal, enable_gqa=hq != hkv
    )
    return fn, [
        lambda: torch.randn(1, hq, sq, d),
        lambda: torch.randn(1, hkv, sk, d),
        lambda: torch.randn(1, hkv, sk, d),
    ]


CASES = {
    "tinyllama_S128": _sdpa(32, 4, 128, 128, 64, True),
    "tinyllama_S512": _sdpa(32, 4, 512, 512, 64, True),
    "qwen_S32": _sdpa(28, 4, 32, 32, 128, True),
    "qwen_S128": _sdpa(28, 4, 128, 128, 128, True),
    "qwen_S512": _sdpa(28, 4, 512, 512, 128, True),
    "d128_S2048": _sdpa(16, 16, 2048, 2048, 128, True),
    "d64_S4096": _sdpa(32, 8, 4096, 4096, 64, True),
    "d1024_S512": _sdpa(8, 8, 512, 512, 1024, False),
    "decode_kv4096": _sdpa(32, 8, 1, 4096, 128, False),
    "decode_kv32768": _sdpa(32, 8, 1, 32768, 128, False),
}


def variants(name: str):
    from deplodock.passes.loop.unroll_dots import UnrollDots
    from deplodock.passes.tensor.softmax_sum import SoftmaxSum
    from deplodock.passes.tile.cooperative_reduce import CooperativeReduce

    out = {"fused": {}, "unfused": {"softmax-sum": SoftmaxSum(fold=False)}}
    if name not in ("tinyllama_S128", "tinyllama_S512", "qwen_S512", "qwen_S128", "qwen_S32"):
        return out
    out["rolled"] = {"unroll-dots": UnrollDots(max_extent=0)}
    for threads in THREADS:
        out[f"t{threads}"] = {"cooperative-reduce": CooperativeReduce(threads=threads, force=True)}
    return out


THREADS = [int(t) for t in __import__("os").environ.get("THREADS", "4,8,16,32").split(",") if t]


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
