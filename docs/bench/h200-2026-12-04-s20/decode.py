"""Session 20: decode attention (one query, 32 query heads over 8 KV heads, head dim 128)
is 7-9% of its memory roofline (KV 32768: 714 us against 63): its walk runs 256 blocks of
64 threads (``weighted_walk_threads`` aims at 128 threads an SM, a prefill's rule) over 8
chunks of the keys (``chunks_for``'s MIN_CHUNK, 4096 elements, counts keys as if a key
were a float). Variants: more chunks of the walk (``chunk-reduce{chunks kernels}``), more
threads a chunk (``cooperative-reduce{threads}``) and bigger blocks
(``blockify-launch{block_threads}``), beside eager and torch.compile in one run
(``deplodock.bench.variants``).

    python3 docs/bench/h200-2026-12-04-s20/decode.py [CASE ...]
"""

import sys
import warnings

import torch

warnings.filterwarnings("ignore")
F = torch.nn.functional


def _decode(kv: int):
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # noqa: E731
    return fn, [
        lambda: torch.randn(1, 32, 1, 128),
        lambda: torch.randn(1, 8, kv, 128),
        lambda: torch.randn(1, 8, kv, 128),
    ]


CASES = {"decode_kv4096": _decode(4096), "decode_kv32768": _decode(32768)}
WALK = ("k_scaled_dot_product_attention",)


def _walk_threads(threads: int):
    """``cooperative-reduce{threads force}`` on the walk's chunk kernel only (the option
    would also spread the scores kernel's dot products of 128 over the threads)."""
    from dataclasses import dataclass

    from xdsl.passes import ModulePass
    from xdsl.pattern_rewriter import PatternRewriteWalker

    from deplodock.dialects import tile
    from deplodock.passes.tile.cooperative_reduce import CooperateOnRows
    from deplodock.target import target_for

    class OnWalk(CooperateOnRows):
        def match_and_rewrite(self, op, rewriter):
            name = op.sym_name.data if isinstance(op, tile.KernelOp) else ""
            if name.startswith("k_scaled") and name.endswith("_chunks"):
                super().match_and_rewrite(op, rewriter)

    @dataclass(frozen=True)
    class WalkThreads(ModulePass):
        name = "cooperative-reduce"

        def apply(self, ctx, op):
            pattern = OnWalk(threads, True, target_for("sm_90"))
            PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)

    return WalkThreads()


def variants(name: str):
    from deplodock.passes.tile.blockify_launch import BlockifyLaunch
    from deplodock.passes.tile.chunk_reduce import ChunkReduce

    out = {"default": {}}
    for chunks in (8, 32, 128):
        for threads in (0, 128):
            for block in (0, 256):
                options = {"chunk-reduce": ChunkReduce(chunks=chunks, kernels=WALK)}
                if threads:
                    options["cooperative-reduce"] = _walk_threads(threads)
                if block:
                    options["blockify-launch"] = BlockifyLaunch(block_threads=block)
                out[f"c{chunks}t{threads or 'd'}b{block or 'd'}"] = options
    return out


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
