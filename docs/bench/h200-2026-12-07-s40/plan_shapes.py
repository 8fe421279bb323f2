"""Session 40: ``tiled_walk_plan`` on attention shapes outside the ones it was set from
(batch > 1, 4-32 heads, S of 200-3001, head dims 64-128, near and past the SM count), each
compiled twice in one process: the default pipeline (the planner decides: register-tiled
walk or not) and ``tile-walk{rows=1}`` (every walk left to the lane-split walk). Both are
checked against eager (max |ours - eager| / max |eager|) and timed beside eager in the
same run (CUDA events, median of rounds), and by their kernels' GPU time
(``torch.profiler``; session 41 found the event times of the small shapes to be the
compiled function's host cost, ~200 us a call then). Without a GPU it compiles both and
says which walk each took.

    python3 plan_shapes.py
"""

import dataclasses
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import deplodock
from deplodock.bench.profile import kernel_times
from deplodock.passes.tile import tile_walk
from deplodock.passes.tile.schedule.reduce import tiled_walk_plan

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "h200-2026-12-07-s38" / "fa"))
from fa import time_us  # noqa: E402

_apply = tile_walk.TileWalk.apply
FORCE_ROWS = {"rows": None}


def _patched(self, ctx, op):
    rows = FORCE_ROWS["rows"]
    return _apply(self if rows is None else dataclasses.replace(self, rows=rows), ctx, op)


tile_walk.TileWalk.apply = _patched

# batch, query heads, kv heads, S, head dim, causal
SHAPES = [
    (1, 16, 16, 256, 64, True),
    (2, 8, 8, 384, 64, False),
    (4, 12, 12, 256, 64, True),
    (1, 16, 4, 384, 128, True),
    (1, 32, 32, 256, 128, False),
    (2, 16, 16, 200, 96, False),
    (1, 8, 8, 2000, 64, True),
    (1, 4, 4, 3001, 64, False),
    (8, 8, 2, 131, 64, True),
    (1, 40, 8, 512, 128, True),
]


class Attention(torch.nn.Module):
    def __init__(self, causal):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=True)


def main():
    gpu = torch.cuda.is_available()
    dev = "cuda" if gpu else "cpu"
    for b, h, hkv, s, d, causal in SHAPES:
        torch.manual_seed(0)
        q = torch.randn(b, h, s, d, device=dev)
        k = torch.randn(b, hkv, s, d, device=dev)
        v = torch.randn(b, hkv, s, d, device=dev)
        module = Attention(causal)
        plan = tiled_walk_plan(s, b * h, d, d)
        flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
        head = f"B{b} H{h}/{hkv} S{s} d{d} {'causal' if causal else 'full'}: planner {plan}"
        if not gpu:
            for rows in (None, 1):
                FORCE_ROWS["rows"] = rows
                deplodock.compile(module, q, k, v, cache=False)
            print(head + " (compiled both; no GPU to run on)")
            continue
        want = module(q, k, v)
        gpu_us = sum(r.us for r in kernel_times(lambda: module(q, k, v), calls=5))
        line = [head, f"eager {time_us(lambda: module(q, k, v)):.1f} (kernels {gpu_us:.1f})"]
        for label, rows in (("default", None), ("lane-split", 1)):
            FORCE_ROWS["rows"] = rows
            fn = deplodock.compile(module, q, k, v, cache=False)
            got = fn(q, k, v)
            err = ((got - want).abs().max() / want.abs().max()).item()
            t = time_us(lambda fn=fn: fn(q, k, v))
            gpu_us = sum(r.us for r in kernel_times(lambda fn=fn: fn(q, k, v), calls=5))
            line.append(
                f"{label} {t:.1f} us, kernels {gpu_us:.1f} us "
                f"({flops / gpu_us / 1e6:.1f} TF/s, err {err:.1e})"
            )
        print("; ".join(line), flush=True)


if __name__ == "__main__":
    sys.exit(main())
