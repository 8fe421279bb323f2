"""Session 18 probe: which SIMT structure should the compiler's attention walk take?

Hand-written CUDA (a measuring stick, not product code): each thread keeps R query rows,
the head dim dealt out to U lanes (float4 slices), keys staged KC at a time in shared
memory, scores for SUB keys at a time in registers with one rescale per SUB keys
(online softmax per sub-chunk), causal key chunks past a block's last row skipped, the
heaviest row blocks launched first (REV). Timed beside eager, torch.compile and
deplodock's own kernel (deplodock.compile) in one run, each checked against eager.

    python3 docs/bench/h200-2026-12-03-s18/flash_probe.py [CASE ...]
"""

import functools
import itertools
import math
import sys
import warnings

import torch

warnings.filterwarnings("ignore")
F = torch.nn.functional

SRC = r"""
#define INFINITY __int_as_float(0x7f800000)
#define D {D}
#define R {R}
#define U {U}
#define KC {KC}
#define SUB {SUB}
#define BR {BR}
#define NT (BR / R * U)
#define DV (D / U / 4)
extern "C" __global__ void __launch_bounds__(NT) flash(const float* __restrict__ q,
    const float* __restrict__ k, const float* __restrict__ v, float* __restrict__ o,
    int HQ, int group, int S, int causal, float scale) {{
  const int tid = threadIdx.x, u = tid % U, g = tid / U;
  const int nb = (S + BR - 1) / BR;
  const int rb = {REV} ? nb - 1 - (int)blockIdx.x / HQ : (int)blockIdx.x / HQ;
  const int h = blockIdx.x % HQ, kvh = h / group;
  const int row0 = rb * BR;
  const float* qh = q + (long long)h * S * D;
  const float* kh = k + (long long)kvh * S * D;
  const float* vh = v + (long long)kvh * S * D;
  __shared__ __align__(16) float ks[KC * D];
  __shared__ __align__(16) float vs[KC * D];
  float4 qr[R][DV], acc[R][DV];
  float m[R], l[R];
  int row[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {{
    row[i] = row0 + g + i * (BR / R);
    const int rr = row[i] < S ? row[i] : S - 1;
#pragma unroll
    for (int j = 0; j < DV; ++j) {{
      qr[i][j] = *reinterpret_cast<const float4*>(&qh[(long long)rr * D + 4 * (u + U * j)]);
      acc[i][j] = make_float4(0.f, 0.f, 0.f, 0.f);
    }}
    m[i] = -INFINITY; l[i] = 0.f;
  }}
  const int last = min(row0 + BR, S) - 1;
  const int kend = causal ? last + 1 : S;
  for (int kc0 = 0; kc0 < kend; kc0 += KC) {{
    __syncthreads();
    for (int f = tid; f < KC * D / 4; f += NT) {{
      const int key = kc0 + f / (D / 4);
      float4 kk = make_float4(0.f, 0.f, 0.f, 0.f), vv = kk;
      if (key < S) {{
        kk = *reinterpret_cast<const float4*>(&kh[(long long)kc0 * D + 4 * f]);
        vv = *reinterpret_cast<const float4*>(&vh[(long long)kc0 * D + 4 * f]);
      }}
      *reinterpret_cast<float4*>(&ks[4 * f]) = kk;
      *reinterpret_cast<float4*>(&vs[4 * f]) = vv;
    }}
    __syncthreads();
    const int jend = min(KC, kend - kc0);
    for (int j0 = 0; j0 < jend; j0 += SUB) {{
      float s[R][SUB];
#pragma unroll
      for (int jj = 0; jj < SUB; ++jj) {{
#pragma unroll
        for (int i = 0; i < R; ++i) s[i][jj] = 0.f;
#pragma unroll
        for (int j = 0; j < DV; ++j) {{
          const float4 kk = *reinterpret_cast<const float4*>(&ks[(j0 + jj) * D + 4 * (u + U * j)]);
#pragma unroll
          for (int i = 0; i < R; ++i)
            s[i][jj] += qr[i][j].x * kk.x + qr[i][j].y * kk.y
                      + qr[i][j].z * kk.z + qr[i][j].w * kk.w;
        }}
      }}
#pragma unroll
      for (int off = U / 2; off > 0; off /= 2)
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int jj = 0; jj < SUB; ++jj) s[i][jj] += __shfl_xor_sync(0xffffffff, s[i][jj], off);
#pragma unroll
      for (int i = 0; i < R; ++i) {{
        float mc = m[i];
#pragma unroll
        for (int jj = 0; jj < SUB; ++jj) {{
          const int key = kc0 + j0 + jj;
          const bool live = key < S && (!causal || key <= row[i]);
          s[i][jj] = live ? s[i][jj] * scale : -INFINITY;
          mc = fmaxf(mc, s[i][jj]);
        }}
        const float alpha = mc == -INFINITY ? 1.f : __expf(m[i] - mc);
        float ps = 0.f;
#pragma unroll
        for (int jj = 0; jj < SUB; ++jj) {{
          s[i][jj] = mc == -INFINITY ? 0.f : __expf(s[i][jj] - mc);
          ps += s[i][jj];
        }}
        l[i] = l[i] * alpha + ps;
        m[i] = mc;
#pragma unroll
        for (int j = 0; j < DV; ++j) {{
          acc[i][j].x *= alpha; acc[i][j].y *= alpha; acc[i][j].z *= alpha; acc[i][j].w *= alpha;
        }}
      }}
#pragma unroll
      for (int jj = 0; jj < SUB; ++jj) {{
#pragma unroll
        for (int j = 0; j < DV; ++j) {{
          const float4 vv = *reinterpret_cast<const float4*>(&vs[(j0 + jj) * D + 4 * (u + U * j)]);
#pragma unroll
          for (int i = 0; i < R; ++i) {{
            acc[i][j].x += s[i][jj] * vv.x; acc[i][j].y += s[i][jj] * vv.y;
            acc[i][j].z += s[i][jj] * vv.z; acc[i][j].w += s[i][jj] * vv.w;
          }}
        }}
      }}
    }}
  }}
#pragma unroll
  for (int i = 0; i < R; ++i) {{
    if (row[i] >= S) continue;
    const float inv = 1.f / l[i];
#pragma unroll
    for (int j = 0; j < DV; ++j) {{
      float4 r = acc[i][j];
      r.x *= inv; r.y *= inv; r.z *= inv; r.w *= inv;
      const long long at = (long long)h * S * D + (long long)row[i] * D + 4 * (u + U * j);
      *reinterpret_cast<float4*>(&o[at]) = r;
    }}
  }}
}}
"""

CASES = {  # name: (HQ, HKV, S, D, causal)
    "tinyllama_S128": (32, 4, 128, 64, True),
    "tinyllama_S512": (32, 4, 512, 64, True),
    "qwen_S128": (28, 4, 128, 128, True),
    "qwen_S512": (28, 4, 512, 128, True),
    "d64_S4096": (32, 8, 4096, 64, True),
    "d128_S2048": (16, 16, 2048, 128, True),
    "d64_S1000": (8, 8, 1000, 64, False),
    "odd_S131": (8, 2, 131, 64, True),
}


def configs(d, s):
    grid = itertools.product((1, 2, 4, 8), (2, 4, 8, 16), (8,), (32, 64, 128), (1,))
    for r, u, sub, br, rev in grid:
        per = r * d // u
        if per not in (32, 64) or u > 16 or br % r or br // r * u > 1024 or br // r * u < 32:
            continue
        if d // u % 4:
            continue
        yield dict(D=d, R=r, U=u, KC=32, SUB=sub, BR=br, REV=rev)
    yield dict(D=d, R=4, U=d // 16, KC=32, SUB=8, BR=64, REV=0)
    yield dict(D=d, R=4, U=d // 16, KC=32, SUB=4, BR=64, REV=1)
    yield dict(D=d, R=4, U=d // 16, KC=32, SUB=1, BR=64, REV=1)


_MODULES = {}


def _module(cfg):
    from deplodock.backends.cuda.driver import LoadedModule
    from deplodock.backends.cuda.nvrtc import compile_cuda

    key = tuple(sorted(cfg.items()))
    if key not in _MODULES:
        _MODULES[key] = LoadedModule(compile_cuda(SRC.format(**cfg), "sm_90"))
    return _MODULES[key]


def _case(name, time_graphs):
    import deplodock

    hq, hkv, s, d, causal = CASES[name]
    q = torch.randn(1, hq, s, d, device="cuda")
    k = torch.randn(1, hkv, s, d, device="cuda")
    v = torch.randn(1, hkv, s, d, device="cuda")

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hq != hkv)

    ref = fn(q, k, v)
    scale = ref.abs().max().item()
    compiled = torch.compile(fn)
    cands = {"eager": lambda: fn(q, k, v), "torch.compile": lambda: compiled(q, k, v)}
    try:
        ours = deplodock.compile(fn)
        err = (ours(q, k, v) - ref).abs().max().item() / scale
        print(f"{name} deplodock err {err:.1e}")
        cands["deplodock"] = lambda: ours(q, k, v)
    except Exception as e:  # noqa: BLE001
        print(f"{name} deplodock failed: {e}")
    out = torch.empty_like(ref)
    flops = 4 * hq * s * s * d * (0.5 if causal else 1.0)
    args = [q, k, v, out, hq, hq // hkv, s, int(causal), 1 / math.sqrt(d)]
    for cfg in configs(d, s):
        label = "R{R}U{U}S{SUB}B{BR}".format(**cfg) + ("" if cfg["REV"] else "fwd")
        try:
            kernel = _module(cfg).function("flash")
        except Exception as e:  # noqa: BLE001
            print(f"  {label}: compile failed {str(e)[:200]}")
            continue
        grid = (hq * math.ceil(s / cfg["BR"]), 1, 1)
        block = (cfg["BR"] // cfg["R"] * cfg["U"], 1, 1)
        launch = functools.partial(kernel.launch, grid, block, args)
        out.zero_()
        launch()
        torch.cuda.synchronize()
        err = (out - ref).abs().max().item()
        if not err <= 1e-5 * scale:
            print(f"  {label}: WRONG err {err:.2e} (of {scale:.1e})")
            continue
        cands[label] = launch
    times = time_graphs(cands, rounds=10, calls=20)
    base = times["torch.compile"].median_us
    print(f"{name}: {flops / 1e9:.2f} GFLOP")
    for label, t in sorted(times.items(), key=lambda kv: kv[1].median_us):
        us = t.median_us
        print(f"  {label:16s} {us:9.1f} us  {flops / us / 1e6:6.1f} TFLOP/s  {base / us:5.2f}x tc")
    sys.stdout.flush()


def main(names):
    from deplodock.backends.cuda.timing import time_graphs

    torch.backends.cuda.matmul.allow_tf32 = False
    for name in names or CASES:
        _case(name, time_graphs)


if __name__ == "__main__":
    main(sys.argv[1:])
