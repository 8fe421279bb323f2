"""Session 41: time the 3xTF32 tensor-core attention (``fatc.cu``) at a few block shapes
against PyTorch's ``scaled_dot_product_attention`` (eager: CUTLASS's memory-efficient
kernel, 3xTF32 on sm_80+) in the same process, each output checked against eager (max
|ours - eager| / max |eager|; SPLIT=1, plain TF32, is timed for the ceiling and is not
expected to pass 1e-5). Without a GPU it compiles each configuration with NVRTC and prints
registers and spills. ``FATC_ONLY=name,..`` keeps the named cases.

    python3 fatc.py
"""

import math
import os
import sys
from pathlib import Path

import torch

from deplodock.backends.cuda.driver import LoadedModule, gpu_available
from deplodock.backends.cuda.nvrtc import compile_cuda

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "h200-2026-12-07-s38" / "fa"))
from fa import time_us  # noqa: E402

SOURCE = (HERE / "fatc.cu").read_text()
# (name, heads, kv heads, S, D, causal, [(BN, WARPS, SPLIT, FAST[, QSPLIT]), ...]); FAST also
# sets EXP2 (fatc.cu: the cheap split, Q prescaled for exp2f; FAST=0 is call 3's kernel);
# QSPLIT=1 splits Q once as it is staged; KVSPLIT=1 each K and V chunk once by the block
CASES = [
    ("d128-S2048-causal", 16, 16, 2048, 128, True, [(64, 4, 3, 1), (32, 4, 3, 1, 0, 1), (32, 8, 3, 1, 0, 1)]),
    ("d64-S1000-full", 8, 8, 1000, 64, False, [(64, 4, 3, 1), (64, 4, 3, 1, 0, 1)]),
    ("d64-S4096-causal-gqa", 32, 8, 4096, 64, True, [(64, 4, 3, 1), (64, 4, 3, 1, 0, 1), (64, 8, 3, 1, 0, 1)]),
    ("tinyllama-S512", 32, 4, 512, 64, True, [(64, 4, 3, 1), (64, 4, 3, 1, 0, 1)]),
    ("qwen-S512", 28, 4, 512, 128, True, [(64, 4, 3, 1), (32, 4, 3, 1, 0, 1)]),
]


def build(
    d: int, bn: int, warps: int, causal: bool, split: int, fast: int = 1, qsplit: int = 0,
    kvsplit: int = 0,
):
    head = (
        f"#define D {d}\n#define BN {bn}\n#define WARPS {warps}\n#define CAUSAL {int(causal)}\n"
        f"#define SPLIT {split}\n#define FAST {fast}\n#define EXP2 {fast}\n#define QSPLIT {qsplit}\n"
        f"#define KVSPLIT {kvsplit}\n"
    )
    return compile_cuda(head + SOURCE)


def shared_bytes(d: int, bn: int, warps: int, qsplit: int = 0, kvsplit: int = 0) -> int:
    q_rows = 16 * warps * (2 if qsplit else 1)
    kv = (3 if kvsplit else 2) * bn * (2 * d + 12)
    return 4 * (q_rows * (d + 4) + kv + warps * 16 * (bn + 4))


def main() -> None:
    gpu = gpu_available()
    only = os.environ.get("FATC_ONLY")
    for name, heads, kv_heads, s, d, causal, shapes in CASES:
        if only and name not in only.split(","):
            continue
        flops = 4 * heads * s * s * d * (0.5 if causal else 1.0)
        print(
            f"== {name}: {flops / 1e9:.2f} GFLOP of {'causal ' if causal else ''}work", flush=True
        )
        if gpu:
            torch.manual_seed(0)
            q = torch.randn(1, heads, s, d, device="cuda")
            k = torch.randn(1, kv_heads, s, d, device="cuda")
            v = torch.randn(1, kv_heads, s, d, device="cuda")
            group = heads // kv_heads
            kr, vr = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
            sdpa = torch.nn.functional.scaled_dot_product_attention
            want = sdpa(q, kr, vr, is_causal=causal)
            t_eager = time_us(lambda: sdpa(q, kr, vr, is_causal=causal))
            print(
                f"eager (k, v repeated before): {t_eager:.1f} us, {flops / t_eager / 1e6:.1f} TFLOP/s"
            )
        for bn, warps, split, fast, *more in shapes:
            qsplit, kvsplit = (list(more) + [0, 0])[:2]
            compiled = build(d, bn, warps, causal, split, fast, qsplit, kvsplit)
            res = compiled.resources["fa"]
            shared = shared_bytes(d, bn, warps, qsplit, kvsplit)
            line = (
                f"BN {bn} warps {warps} {'3xTF32' if split == 3 else 'TF32'} fast {fast} qsplit {qsplit} kvsplit {kvsplit}: "
                f"{res.registers} "
                f"registers, spills {res.spill_stores}, {shared} B shared"
            )
            if not gpu:
                print(line + " (no GPU to run on)")
                continue
            fn = LoadedModule(compiled).function("fa")
            out = torch.full_like(q, float("nan"))
            grid = (math.ceil(s / (16 * warps)), heads, 1)
            args = [q, k, v, out, s, heads, kv_heads, 1.0 / math.sqrt(d)]

            def run(fn=fn, grid=grid, warps=warps, shared=shared, args=args):
                fn.launch(grid, (32 * warps, 1, 1), args, shared_bytes=shared)

            run()
            torch.cuda.synchronize()
            err = ((out - want).abs().max() / want.abs().max()).item()
            t = time_us(run)
            print(
                f"{line}; max rel err {err:.1e}; {t:.1f} us, {flops / t / 1e6:.1f} TFLOP/s, "
                f"{t_eager / t:.2f}x eager",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
