"""Session 41: check ``fatc.cu`` (3xTF32 attention on mma.sync) on the CPU before a GPU
times it: session 38's shim (``fa/check_cpu.py``: a std::thread per CUDA thread, one
barrier for ``__syncthreads`` and the shuffles) plus an emulated ``mma.sync.m16n8k8``:
each lane puts its A, B fragments in a slot, a barrier, each lane computes its four
accumulators from its warp's slots by the PTX ISA's fragment layouts (operands rounded
to tf32 as ``cvt.rna`` does, the rest truncated as the tensor core reads them), a
barrier. Every mma of the kernel runs in uniform control flow, so the block barrier
stands in for the warp's. Compared with numpy in float64 on ragged shapes (S not a
multiple of the block or the chunk, grouped query heads, causal and not); a broken
fragment layout or rescale lands far above 1e-5.

    python3 check_tc.py [--mutate]
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
S38 = HERE.parents[1] / "h200-2026-12-07-s38" / "fa"
sys.path.insert(0, str(S38))
from check_cpu import SHIM, reference  # noqa: E402

TC_SHIM = r"""
struct float2 { float x, y; };
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline void __syncwarp() { g_bar->arrive_and_wait(); }
static float* g_mma;
static inline unsigned to_tf32(float x) {  // cvt.rna.tf32.f32
  unsigned u; std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u += 0x1000u;
  return u & 0xffffe000u;
}
static inline void mma(float* c, const unsigned* a, const unsigned* b) {
  const int t = threadIdx.x, base = t / 32 * 32, lane = t % 32;
  float* mine = g_mma + 6 * t;
  for (int i = 0; i < 4; ++i) mine[i] = __uint_as_float(a[i] & 0xffffe000u);
  for (int i = 0; i < 2; ++i) mine[4 + i] = __uint_as_float(b[i] & 0xffffe000u);
  g_bar->arrive_and_wait();
  float d[4];
  const int gid = lane / 4, t4 = lane % 4;
  for (int e = 0; e < 4; ++e) {
    const int row = gid + 8 * (e >> 1), col = 2 * t4 + (e & 1);
    float acc = c[e];
    for (int kk = 0; kk < 8; ++kk) {
      const float av = g_mma[6 * (base + (row % 8) * 4 + kk % 4) + (row >= 8) + 2 * (kk >= 4)];
      const float bv = g_mma[6 * (base + col * 4 + kk % 4) + 4 + (kk >= 4)];
      acc += av * bv;
    }
    d[e] = acc;
  }
  g_bar->arrive_and_wait();
  for (int e = 0; e < 4; ++e) c[e] = d[e];
}
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
  std::vector<float> smem(2 * BM * KP + 3 * BN * KP + 3 * BN * VP + WARPS * 16 * PP, NAN);
  std::vector<float> slots(NT), mmas(6 * NT);
  g_smem = smem.data(); g_slots = slots.data(); g_mma = mmas.data();
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
# (D, BN, WARPS, causal, S, heads, kv heads)
CONFIGS = [
    (64, 64, 4, True, 70, 4, 2),
    (64, 32, 2, False, 37, 2, 2),
    (128, 64, 4, True, 130, 2, 1),
    (128, 32, 4, False, 67, 1, 1),
    (16, 64, 1, True, 1, 2, 2),
    (128, 64, 2, True, 33, 2, 2),
]


def main() -> int:
    mutate = "--mutate" in sys.argv  # a broken C fragment layout must fail
    kernel = (HERE / "fatc.cu").read_text()
    kernel = kernel.replace('extern "C" ', "").replace(
        "extern __shared__ __align__(16) float smem[];", "float* smem = g_smem;"
    )
    if mutate:
        kernel = kernel.replace("row = r0 + 8 * (e >> 1)", "row = r0 + 8 * (e & 1)")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for (d, bn, warps, causal, s, heads, kv_heads), fast, qsplit, kvsplit in [
            (c, f, q, kv) for f, q, kv in ((1, 0, 1), (1, 1, 0), (1, 0, 0), (0, 0, 0)) for c in CONFIGS
        ]:
            head = (
                f"#define D {d}\n#define BN {bn}\n#define WARPS {warps}\n"
                f"#define CAUSAL {int(causal)}\n#define SPLIT 3\n#define FAST {fast}\n#define EXP2 {fast}\n#define QSPLIT {qsplit}\n#define KVSPLIT {kvsplit}\n"
            )
            src, exe = Path(tmp) / "fatc.cpp", Path(tmp) / "fatc"
            src.write_text(head + SHIM + TC_SHIM + kernel + MAIN)
            subprocess.run(
                ["g++", "-std=c++20", "-O1", "-pthread", "-w", "-o", str(exe), str(src)], check=True
            )
            rng = np.random.default_rng(1)
            q = rng.standard_normal((heads, s, d), dtype=np.float32)
            k = rng.standard_normal((kv_heads, s, d), dtype=np.float32)
            v = rng.standard_normal((kv_heads, s, d), dtype=np.float32)
            (Path(tmp) / "in.bin").write_bytes(q.tobytes() + k.tobytes() + v.tobytes())
            subprocess.run(
                [str(exe), str(s), str(heads), str(kv_heads), f"{tmp}/in.bin", f"{tmp}/out.bin"],
                check=True,
            )
            got = np.frombuffer((Path(tmp) / "out.bin").read_bytes(), np.float32)
            want = reference(q, k, v, causal)
            err = float(np.abs(got.reshape(want.shape) - want).max() / np.abs(want).max())
            worst = max(worst, err if np.isfinite(err) else np.inf)
            print(
                f"fast {fast} qsplit {qsplit} kvsplit {kvsplit} D {d} BN {bn} warps {warps} causal {causal} S {s} heads {heads}/{kv_heads}: "
                f"max rel err {err:.1e}"
            )
    ok = worst <= 1e-5
    print("all within 1e-5" if ok else f"FAILED: worst {worst:.1e}")
    return 0 if ok != mutate else 1


if __name__ == "__main__":
    sys.exit(main())
