"""Session 15: attention's walk staged a chunk of keys at a time (``chunk-walk``: the rows
of a block share each chunk of key and value rows in shared memory) and a causal block's
walk stopped at its last live chunk (``skip-masked-chunks``) and its head dim dealt out to lanes (``split-walk-columns``;
``lanes=1``: its keys split across threads, as before), against the walk that reads
them from global memory (``chunk-walk{chunk=1}``, session 14's kernel), no skipping, the
dot products in one chain of adds (``unroll-dots{chains=1}``), other
chunk lengths, threads a row and block sizes, beside eager and torch.compile in one run
(``deplodock.bench.variants``: each variant checked against eager at 1e-5 of the largest
output, then timed).

    python3 docs/bench/h200-2026-12-03-s15/attention.py [CASE ...]      # default: all
"""

import os
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
    "tinyllama_S32": _sdpa(32, 4, 32, 32, 64, True),
    "tinyllama_S128": _sdpa(32, 4, 128, 128, 64, True),
    "tinyllama_S512": _sdpa(32, 4, 512, 512, 64, True),
    "qwen_S32": _sdpa(28, 4, 32, 32, 128, True),
    "qwen_S128": _sdpa(28, 4, 128, 128, 128, True),
    "qwen_S512": _sdpa(28, 4, 512, 512, 128, True),
    "d128_S2048": _sdpa(16, 16, 2048, 2048, 128, True),
    "d64_S4096": _sdpa(32, 8, 4096, 4096, 64, True),
    "d64_S1000": _sdpa(8, 8, 1000, 1000, 64, False),
    "decode_kv4096": _sdpa(32, 8, 1, 4096, 128, False),
    "decode_kv32768": _sdpa(32, 8, 1, 32768, 128, False),
}

CHUNKS = [int(c) for c in os.environ.get("CHUNKS", "1,64").split(",") if c]
THREADS = [int(t) for t in os.environ.get("THREADS", "1,4").split(",") if t]
BLOCKS = [int(b) for b in os.environ.get("BLOCKS", "128").split(",") if b]
LANES = [int(u) for u in os.environ.get("LANES", "1,2,8").split(",") if u]


def variants(name: str):
    from deplodock.passes.tile.blockify_launch import BlockifyLaunch
    from deplodock.passes.tile.chunk_walk import ChunkWalk
    from deplodock.passes.tile.cooperative_reduce import CooperativeReduce
    from deplodock.passes.tile.skip_masked_chunks import SkipMaskedChunks

    from deplodock.passes.loop.unroll_dots import UnrollDots
    from deplodock.passes.tile.split_walk_columns import SplitWalkColumns

    out = {"default": {}, "noskip": {"skip-masked-chunks": SkipMaskedChunks(skip=False)}}
    out["chain1"] = {"unroll-dots": UnrollDots(chains=1)}
    for lanes in LANES:
        out[f"u{lanes}"] = {"split-walk-columns": SplitWalkColumns(lanes=lanes)}
    for chunk in CHUNKS:
        out["unchunked" if chunk == 1 else f"c{chunk}"] = {"chunk-walk": ChunkWalk(chunk=chunk)}
    if name.startswith("decode"):
        return out
    for threads in THREADS:
        out[f"t{threads}"] = {"cooperative-reduce": CooperativeReduce(threads=threads, force=True)}
    for block in BLOCKS:
        out[f"b{block}"] = {"blockify-launch": BlockifyLaunch(block_threads=block)}
    return out


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
