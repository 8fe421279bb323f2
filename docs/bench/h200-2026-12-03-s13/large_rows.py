"""Rows past 48 KB on the H200: stage-inputs' large slab (the whole row in dynamic shared
memory, filled by cp.async) against the row read from global memory again, beside eager
and torch.compile in one run.

    python3 docs/bench/h200-2026-12-03-s13/large_rows.py [CASE ...]      # default: all

Each case is lowered two ways through the passes' own options (``variants``): ``large``
(the default pipeline of session 13) and ``global`` (``stage-inputs{large=false}``: the
row re-read from HBM, the code before); ``two_sums`` (two independent sums fused into one
kernel) ``chunked`` against ``one-block``. Each is checked against eager and timed beside
eager and torch.compile in one run by ``deplodock.bench.variants`` (its docstring gives
the report's lines; run 1's % of copy was against a copy the script timed itself, 2.72-2.77
TB/s, not the bench's 4.25 TB/s).
"""

import sys
import warnings

import torch

warnings.filterwarnings("ignore")

F = torch.nn.functional
CASES = {  # name: (function, input makers)
    "softmax_odd": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(4096, 50257)]),
    "softmax_12289": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(16384, 12289)]),
    "softmax_16k": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8192, 16384)]),
    "softmax_32k": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(4096, 32768)]),
    "log_softmax_odd": (lambda x: torch.log_softmax(x, -1), [lambda: torch.randn(4096, 50257)]),
    "layernorm_20011": (
        lambda x, w, b: F.layer_norm(x, (20011,), w, b),
        [lambda: torch.randn(8192, 20011), lambda: torch.randn(20011), lambda: torch.randn(20011)],
    ),
    "rmsnorm_32k": (
        lambda x, w: F.rms_norm(x, (32768,), w),
        [lambda: torch.randn(4096, 32768), lambda: torch.randn(32768)],
    ),
    "softmax_24000": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8192, 24000)]),
    "softmax_28000": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8192, 28000)]),
    "two_sums": (
        lambda x, y: x.sum() + y.sum(),
        [lambda: torch.randn(16384, 16384), lambda: torch.randn(20000)],
    ),
    "cross_entropy": (
        lambda x, t: F.cross_entropy(x, t),
        [lambda: torch.randn(8192, 32001), lambda: torch.randint(0, 32001, (8192,))],
    ),
}


def variants(name: str):
    """The default pipeline against the code before it: rows re-read from global memory
    (``stage-inputs{large=false}``); for ``two_sums`` the fused kernel left whole
    (``chunk-reduce{chunks=1}``, what chunk-reduce did with two reductions before)."""
    from deplodock.passes.tile.chunk_reduce import ChunkReduce
    from deplodock.passes.tile.stage_inputs import StageInputs

    if name == "two_sums":
        return {"chunked": {}, "one-block": {"chunk-reduce": ChunkReduce(chunks=1)}}
    return {"large": {}, "global": {"stage-inputs": StageInputs(large=False)}}


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
