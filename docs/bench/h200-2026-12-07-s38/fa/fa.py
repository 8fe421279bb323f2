"""Session 38: time the hand-written register-tiled attention walk (``fa.cu``) at several
block shapes against PyTorch's ``scaled_dot_product_attention`` (eager: on Hopper its fp32
path is CUTLASS's memory-efficient kernel on tensor cores, 3xTF32), each output checked
against eager (max |ours - eager| / max |eager|). Without a GPU it compiles every
configuration with NVRTC and prints registers and spills.

    python3 fa.py
"""

import math
import statistics
import sys
from pathlib import Path

import torch

from deplodock.backends.cuda.driver import LoadedModule, gpu_available
from deplodock.backends.cuda.nvrtc import compile_cuda

SOURCE = (Path(__file__).resolve().parent / "fa.cu").read_text()
# (name, heads, kv heads, S, D, causal, [(BM, BN, ASYNC[, PSHFL[, DUNROLL[, TX]]]), ...])
CASES = [
    ("attention-shapes/d128/S2048/causal", 16, 16, 2048, 128, True,
     [(64, 32, 1), (64, 64, 1, 0, 4, 16), (64, 32, 1, 0, 4, 16), (128, 32, 1, 0, 4, 16),
      (32, 64, 1, 0, 4, 16), (64, 64, 0, 0, 4, 16), (64, 64, 1, 0, 2, 16), (64, 64, 1, 0, 4, 32)]),
    ("attention-shapes/d64/S1000/full", 8, 8, 1000, 64, False,
     [(32, 64, 1), (64, 64, 1, 0, 4, 16), (32, 64, 1, 0, 4, 16), (64, 32, 1, 0, 4, 4),
      (32, 32, 1, 0, 4, 4), (64, 64, 0, 0, 4, 16)]),
    ("attention-shapes/d64/S4096/causal (GQA 32/8)", 32, 8, 4096, 64, True,
     [(64, 64, 1), (64, 64, 1, 0, 4, 16), (128, 64, 1, 0, 4, 16), (64, 32, 1, 0, 4, 4)]),
    ("attention/tinyllama/S512 (GQA 32/4)", 32, 4, 512, 64, True,
     [(64, 64, 1, 1), (64, 64, 1), (64, 64, 1, 0, 4, 16), (32, 64, 1, 0, 4, 16), (64, 64, 0, 0, 4, 16),
      (64, 32, 1, 0, 4, 4)]),
]


def build(
    d: int, bm: int, bn: int, causal: bool, async_: int, pshfl: int = 0, dunroll: int = 4, tx: int = 8
):
    head = (
        f"#define D {d}\n#define BM {bm}\n#define BN {bn}\n#define CAUSAL {int(causal)}\n"
        f"#define ASYNC {async_}\n#define PSHFL {pshfl}\n#define DUNROLL {dunroll}\n"
        f"#define TX {tx}\n"
    )
    return compile_cuda(head + SOURCE)


def shared_bytes(d: int, bm: int, bn: int, async_: int, pshfl: int = 0) -> int:
    return 4 * ((bm + 2 * (1 + async_) * bn) * (d + 4) + (0 if pshfl else bn * (bm + 4)))


def time_us(fn, rounds: int = 7, calls: int = 20) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(rounds):
        fn()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000 / calls)
    return statistics.median(times)


def main() -> None:
    gpu = gpu_available()
    for name, heads, kv_heads, s, d, causal, shapes in CASES:
        flops = 4 * heads * s * s * d * (0.5 if causal else 1.0)
        print(f"== {name}: {flops / 1e9:.2f} GFLOP of {'causal ' if causal else ''}work")
        if gpu:
            torch.manual_seed(0)
            q = torch.randn(1, heads, s, d, device="cuda")
            k = torch.randn(1, kv_heads, s, d, device="cuda")
            v = torch.randn(1, kv_heads, s, d, device="cuda")
            group = heads // kv_heads

            def eager():
                return torch.nn.functional.scaled_dot_product_attention(
                    q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), is_causal=causal
                ) if group > 1 else torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

            want = eager()
            kr, vr = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
            t_eager = time_us(lambda: torch.nn.functional.scaled_dot_product_attention(q, kr, vr, is_causal=causal))
            print(f"eager (k, v repeated before): {t_eager:.1f} us, {flops / t_eager / 1e6:.1f} TFLOP/s")
        for bm, bn, async_, *more in shapes:
            pshfl, dunroll, tx = (more + [0, 4, 8][len(more):])[:3]
            compiled = build(d, bm, bn, causal, async_, pshfl, dunroll, tx)
            res = compiled.resources["fa"]
            shared = shared_bytes(d, bm, bn, async_, pshfl)
            line = (
                f"BM {bm} BN {bn} {'cp.async x2' if async_ else 'sync'}"
                f"{' P shfl' if pshfl else ''}{f' d-unroll {dunroll}' if dunroll != 4 else ''}"
                f"{f' TX {tx}' if tx != 8 else ''}: "
                f"{res.registers} registers, "
                f"spills {res.spill_stores}, {shared} B shared"
            )
            if not gpu:
                print(line + " (no GPU to run on)")
                continue
            fn = LoadedModule(compiled).function("fa")
            out = torch.full_like(q, float("nan"))
            grid = (math.ceil(s / bm), heads, 1)
            block = (bm // 4 * tx, 1, 1)
            args = [q, k, v, out, s, heads, kv_heads, 1.0 / math.sqrt(d)]

            def run(fn=fn, grid=grid, block=block, shared=shared, args=args):
                fn.launch(grid, block, args, shared_bytes=shared)

            run()
            torch.cuda.synchronize()
            err = ((out - want).abs().max() / want.abs().max()).item()
            t = time_us(run)
            print(f"{line}; max rel err {err:.1e}; {t:.1f} us, {flops / t / 1e6:.1f} TFLOP/s, {t_eager / t:.2f}x eager")


if __name__ == "__main__":
    sys.exit(main())
