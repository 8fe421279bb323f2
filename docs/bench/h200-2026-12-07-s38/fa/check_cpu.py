"""Session 38: check ``fa.cu`` on the CPU before a GPU times it. The kernel is compiled as
C++ (g++, C++20) under a small shim: each block's threads are ``std::thread``s, sharing
one ``std::barrier`` for ``__syncthreads``, and ``__shfl_xor_sync`` exchanges through a
slot a thread between two barriers (every shuffle of the kernel runs in uniform control
flow, so a block-wide barrier stands in for the warp's). Blocks run one after another.
Each configuration's output is compared with attention in numpy (float64) on shapes that
leave every edge ragged (S not a multiple of BM or BN, grouped query heads).

    python3 check_cpu.py
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include <algorithm>
struct float4 { float x, y, z, w; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
struct dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local dim3 threadIdx, blockIdx;
static dim3 gridDim;
static std::barrier<>* g_bar;
static float* g_slots;
static float* g_smem;
static inline void __syncthreads() { g_bar->arrive_and_wait(); }
static inline float __shfl_xor_sync(unsigned, float v, int o) {
  const int t = threadIdx.x;
  g_slots[t] = v;
  g_bar->arrive_and_wait();
  const float r = g_slots[t ^ o];
  g_bar->arrive_and_wait();
  return r;
}
static inline float __shfl_sync(unsigned, float v, int src, int width) {
  const int t = threadIdx.x;
  g_slots[t] = v;
  g_bar->arrive_and_wait();
  const float r = g_slots[(t & ~(width - 1)) | src];
  g_bar->arrive_and_wait();
  return r;
}
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
using std::min;
#define __global__
#define __launch_bounds__(n)
#define __device__
#define __forceinline__ inline
// cp.async copies at once here (a missing wait is not caught; a copy into the buffer
// being read is)
static inline void cp_async16(float* dst, const float* src, bool valid) {
  for (int i = 0; i < 4; ++i) dst[i] = valid ? src[i] : 0.f;
}
static inline void cp_async_commit() {}
template <int N> static inline void cp_async_wait() {}
"""
MAIN = r"""
int main(int argc, char** argv) {
  const int S = atoi(argv[1]), H = atoi(argv[2]), HKV = atoi(argv[3]);
  const float scale = 1.0f / std::sqrt((float)D);
  std::vector<float> q((size_t)H * S * D), k((size_t)HKV * S * D), v(k.size()), o(q.size(), NAN);
  FILE* f = fopen(argv[4], "rb");
  fread(q.data(), 4, q.size(), f); fread(k.data(), 4, k.size(), f); fread(v.data(), 4, v.size(), f);
  fclose(f);
  gridDim = {(unsigned)((S + BM - 1) / BM), (unsigned)H, 1};
  std::vector<float> smem(((BM + 2 * KV_BUFFERS * BN) * DP + BN * PP) + 64, NAN), slots(NT);
  g_smem = smem.data(); g_slots = slots.data();
  for (unsigned by = 0; by < gridDim.y; ++by)
    for (unsigned bx = 0; bx < gridDim.x; ++bx) {
      std::barrier<> bar(NT);
      g_bar = &bar;
      std::vector<std::thread> threads;
      for (int t = 0; t < NT; ++t)
        threads.emplace_back([&, t] {
          threadIdx = {(unsigned)t, 0, 0};
          blockIdx = {bx, by, 0};
          fa(q.data(), k.data(), v.data(), o.data(), S, H, HKV, scale);
        });
      for (auto& th : threads) th.join();
    }
  f = fopen(argv[5], "wb"); fwrite(o.data(), 4, o.size(), f); fclose(f);
  return 0;
}
"""
# (D, BM, BN, causal, S, heads, kv heads, async[, P by shuffles[, TX]])
CONFIGS = [
    (64, 32, 32, True, 70, 4, 2, 0),
    (64, 16, 64, False, 37, 2, 2, 0),
    (64, 32, 64, False, 100, 2, 1, 0),
    (128, 64, 32, True, 130, 2, 1, 0),
    (128, 64, 64, True, 67, 1, 1, 0),
    (128, 128, 64, False, 1, 2, 2, 0),
    (64, 32, 32, True, 70, 4, 2, 1),
    (64, 32, 64, False, 100, 2, 1, 1),
    (128, 64, 32, True, 130, 2, 1, 1),
    (128, 64, 64, False, 131, 1, 1, 1),
    (64, 32, 32, True, 70, 4, 2, 1, 1),
    (64, 32, 64, False, 100, 2, 1, 0, 1),
    (128, 64, 32, True, 130, 2, 1, 1, 1),
    (128, 64, 64, True, 130, 2, 1, 1, 0, 16),
    (128, 32, 64, False, 37, 2, 2, 0, 1, 16),
    (64, 64, 64, True, 131, 2, 1, 1, 0, 16),
    (64, 64, 32, False, 70, 1, 1, 0, 0, 4),
]


def reference(q, k, v, causal):
    heads, s, d = q.shape
    group = heads // k.shape[0]
    kk, vv = np.repeat(k, group, 0).astype(np.float64), np.repeat(v, group, 0).astype(np.float64)
    scores = q.astype(np.float64) @ kk.transpose(0, 2, 1) / np.sqrt(d)
    if causal:
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    return (scores / scores.sum(-1, keepdims=True)) @ vv


def main() -> int:
    kernel = (HERE / "fa.cu").read_text()
    kernel = kernel.replace('extern "C" ', "").replace(
        "extern __shared__ __align__(16) float smem[];", "float* smem = g_smem;"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for d, bm, bn, causal, s, heads, kv_heads, async_, *pshfl in CONFIGS:
            head = (
                f"#define D {d}\n#define BM {bm}\n#define BN {bn}\n#define CAUSAL {int(causal)}\n"
                f"#define ASYNC {async_}\n#define PSHFL {pshfl[0] if pshfl else 0}\n"
                f"#define TX {pshfl[1] if len(pshfl) > 1 else 8}\n"
            )
            src, exe = Path(tmp) / "fa.cpp", Path(tmp) / "fa"
            src.write_text(head + SHIM + kernel + MAIN)
            subprocess.run(
                ["g++", "-std=c++20", "-O1", "-pthread", "-w", "-o", str(exe), str(src)], check=True
            )
            rng = np.random.default_rng(0)
            q = rng.standard_normal((heads, s, d), dtype=np.float32)
            k = rng.standard_normal((kv_heads, s, d), dtype=np.float32)
            v = rng.standard_normal((kv_heads, s, d), dtype=np.float32)
            (Path(tmp) / "in.bin").write_bytes(q.tobytes() + k.tobytes() + v.tobytes())
            subprocess.run([str(exe), str(s), str(heads), str(kv_heads), f"{tmp}/in.bin", f"{tmp}/out.bin"], check=True)
            got = np.frombuffer((Path(tmp) / "out.bin").read_bytes(), np.float32).reshape(heads, s, d)
            want = reference(q, k, v, causal)
            err = float(np.abs(got - want).max() / np.abs(want).max())
            worst = max(worst, err if np.isfinite(err) else np.inf)
            print(
                f"D {d} BM {bm} BN {bn} causal {causal} async {async_} pshfl {pshfl} S {s} heads {heads}/{kv_heads}: "
                f"max rel err {err:.1e}"
            )
    print("all within 1e-5" if worst <= 1e-5 else f"FAILED: worst {worst:.1e}")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
