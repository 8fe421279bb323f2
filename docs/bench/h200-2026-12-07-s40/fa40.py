"""Session 40: which of the generated walk's differences from the hand kernel cost time.
``fa40.cu`` is session 38's ``fa.cu`` with five switches, each turning one habit of the
kernel ``tile-walk`` emits on (GSCALE, GWEIGHT, GMERGE, SCALARP, XSYNC: see its head).
Each variant is checked against eager (max |ours - eager| / max |eager|) and timed in the
same run; without a GPU every variant is compiled by NVRTC (registers, spills) and
checked on the CPU as C++ (``--cpu``: the shim of ``check_cpu.py``).

    python3 fa40.py [--cpu]
"""

import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "h200-2026-12-07-s38" / "fa"))
import check_cpu  # noqa: E402
import fa  # noqa: E402

SOURCE = (HERE / "fa40.cu").read_text()
VARIANTS = [
    {},
    {"GSCALE": 1},
    {"GWEIGHT": 1},
    {"GWEIGHT": 1, "GMERGE": 1},
    {"SCALARP": 1},
    {"XSYNC": 1},
    {"GSCALE": 1, "GWEIGHT": 1, "GMERGE": 1, "SCALARP": 1, "XSYNC": 1},
    {"GMERGE": 2, "GWEIGHT": 1},
    {"GMERGE": 1, "GWEIGHT": 2},
    {"GMERGE": 2, "GWEIGHT": 2},
]
if "FA40_ONLY" in os.environ:  # a comma-separated list of variant numbers
    VARIANTS = [VARIANTS[int(i)] for i in os.environ["FA40_ONLY"].split(",")]
# name, heads, kv heads, S, D, causal, BM, BN (tiled_walk_plan's rows and chunk)
CASES = [
    ("attention-shapes/d64/S1000/full", 8, 8, 1000, 64, False, 32, 64),
    ("attention/tinyllama/S512", 32, 4, 512, 64, True, 64, 64),
    ("attention-shapes/d128/S2048/causal", 16, 16, 2048, 128, True, 64, 32),
]


def header(d, bm, bn, causal, flags):
    defs = dict(D=d, BM=bm, BN=bn, CAUSAL=int(causal), ASYNC=1, **flags)
    return "".join(f"#define {k} {v}\n" for k, v in defs.items())


def name(flags):
    return "+".join(k if v == 1 else f"{k}={v}" for k, v in flags.items()) or "hand"


def cpu_check() -> int:
    kernel = SOURCE.replace('extern "C" ', "").replace(
        "extern __shared__ __align__(16) float smem[];", "float* smem = g_smem;"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for d, bm, bn, causal, s, heads, kv_heads in [
            (64, 32, 64, False, 100, 2, 1),
            (64, 64, 64, True, 131, 2, 1),
            (128, 64, 32, True, 70, 2, 2),
        ]:
            for flags in VARIANTS:
                src, exe = Path(tmp) / "fa.cpp", Path(tmp) / "fa"
                src.write_text(
                    header(d, bm, bn, causal, flags) + check_cpu.SHIM + kernel + check_cpu.MAIN
                )
                subprocess.run(
                    ["g++", "-std=c++20", "-O1", "-pthread", "-w", "-o", str(exe), str(src)],
                    check=True,
                )
                rng = np.random.default_rng(0)
                q = rng.standard_normal((heads, s, d), dtype=np.float32)
                k = rng.standard_normal((kv_heads, s, d), dtype=np.float32)
                v = rng.standard_normal((kv_heads, s, d), dtype=np.float32)
                (Path(tmp) / "in.bin").write_bytes(q.tobytes() + k.tobytes() + v.tobytes())
                subprocess.run(
                    [
                        str(exe),
                        str(s),
                        str(heads),
                        str(kv_heads),
                        f"{tmp}/in.bin",
                        f"{tmp}/out.bin",
                    ],
                    check=True,
                )
                got = np.frombuffer((Path(tmp) / "out.bin").read_bytes(), np.float32).reshape(
                    q.shape
                )
                want = check_cpu.reference(q, k, v, causal)
                err = float(np.abs(got - want).max() / np.abs(want).max())
                worst = max(worst, err if np.isfinite(err) else np.inf)
                print(
                    f"D {d} BM {bm} BN {bn} causal {causal} S {s} {name(flags)}: max rel err {err:.1e}"
                )
    print("all within 1e-5" if worst <= 1e-5 else f"FAILED: worst {worst:.1e}")
    return 0 if worst <= 1e-5 else 1


def main() -> int:
    import torch

    from deplodock.backends.cuda.driver import LoadedModule, gpu_available
    from deplodock.backends.cuda.nvrtc import compile_cuda

    gpu = gpu_available()
    for case, heads, kv_heads, s, d, causal, bm, bn in CASES:
        flops = 4 * heads * s * s * d * (0.5 if causal else 1.0)
        print(f"== {case}: BM {bm} BN {bn}, {flops / 1e9:.2f} GFLOP")
        if gpu:
            torch.manual_seed(0)
            q = torch.randn(1, heads, s, d, device="cuda")
            k = torch.randn(1, kv_heads, s, d, device="cuda")
            v = torch.randn(1, kv_heads, s, d, device="cuda")
            g = heads // kv_heads
            kr, vr = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
            sdpa = torch.nn.functional.scaled_dot_product_attention
            want = sdpa(q, kr, vr, is_causal=causal)
            t_eager = fa.time_us(lambda: sdpa(q, kr, vr, is_causal=causal))
            print(f"eager (k, v repeated before): {t_eager:.1f} us")
        for flags in VARIANTS:
            compiled = compile_cuda(header(d, bm, bn, causal, flags) + SOURCE)
            res = compiled.resources["fa"]
            line = f"{name(flags):40s} {res.registers} registers, spills {res.spill_stores}"
            if not gpu:
                print(line + " (no GPU to run on)")
                continue
            fn = LoadedModule(compiled).function("fa")
            out = torch.full_like(q, float("nan"))
            shared = fa.shared_bytes(d, bm, bn, 1)
            grid, block = (math.ceil(s / bm), heads, 1), (bm // 4 * 8, 1, 1)
            args = [q, k, v, out, s, heads, kv_heads, 1.0 / math.sqrt(d)]

            def run(fn=fn, grid=grid, block=block, shared=shared, args=args):
                fn.launch(grid, block, args, shared_bytes=shared)

            run()
            torch.cuda.synchronize()
            err = ((out - want).abs().max() / want.abs().max()).item()
            t = fa.time_us(run, rounds=9)
            print(f"{line}; err {err:.1e}; {t:7.1f} us, {flops / t / 1e6:.1f} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(cpu_check() if "--cpu" in sys.argv else main())
