"""Probe: what would take ``torch.matmul`` at 4096 from 0.88x to 0.9x cuBLAS.

On the GPU machine, from the repo root::

    python3 docs/bench/h200-2026-11-30-s6/probe.py OUT

The generated kernel for a[n, n] @ b[n, n] (128x128 block tile, 8x8 per thread, K chunk 8)
stores the ``a`` slab transposed ([k][m]) so each thread reads its 8 rows as two float4 at
one k. A transposed slab cannot be filled by 16-byte ``cp.async``, so that kernel is
single-buffered with plain loads. This probe times, beside cuBLAS and the generated
kernel, the same tile with ``a`` kept in source order ([m][k], rows padded by 4) and both
slabs filled by 16-byte ``cp.async`` in STAGES buffers, reading ``a``:

* ``vec``: four k at a time, one float4 per row (8 rows x 4 k in registers);
* ``scalar``: one k at a time, a float per row (what the register tile emits today; the
  question is whether NVRTC merges those loads itself).

Also the generated kernel with its K loop unrolled 4, 2 and 1 times (``u4``...), and a
``sync`` hand-written control (transposed slab, single buffer: should match the generated
kernel). Each variant swaps the generated kernel's source for its own (same name, grid,
block, arguments), is checked against PyTorch and timed with ``time_graphs`` (TF32 off).
Writes OUT/probe.txt and OUT/probe.json.
"""

import json
import re
import sys
from pathlib import Path

SIZES = (2048, 4096)

HAND = r"""
#define N {n}
#define KC {kc}
#define STAGES {stages}
#define PAD 4
__device__ __forceinline__ void cp16(float* smem, const float* gmem) {{
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::
               "r"((unsigned)__cvta_generic_to_shared(smem)), "l"(gmem) : "memory");
}}
extern "C" __global__ void __launch_bounds__(256, 2) k_matmul(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c) {{
  __shared__ __align__(16) float as[STAGES][128][KC + PAD];
  __shared__ __align__(16) float bs[STAGES][KC][128];
  const int tid = threadIdx.x;
  const int bm = blockIdx.x / (N / 128), bn = blockIdx.x % (N / 128);
  const int ty = tid / 16, tx = tid % 16;
  const float* ag = a + (long)bm * 128 * N;
  const float* bg = b + bn * 128;
  float acc[8][8];
  #pragma unroll
  for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  auto fill = [&](int stage, int k0) {{
    #pragma unroll
    for (int v = tid; v < 128 * KC / 4; v += 256) {{
      const int row = v / (KC / 4), kq = v % (KC / 4);
      cp16(&as[stage][row][kq * 4], ag + (long)row * N + k0 + kq * 4);
    }}
    #pragma unroll
    for (int v = tid; v < KC * 32; v += 256) {{
      const int k = v / 32, nq = v % 32;
      cp16(&bs[stage][k][nq * 4], bg + (long)(k0 + k) * N + nq * 4);
    }}
  }};
  #pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {{
    fill(s, s * KC);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }}
  for (int kt = 0; kt < N / KC; ++kt) {{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory");
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < N / KC) fill(next % STAGES, next * KC);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    const int s = kt % STAGES;
{compute}
  }}
  #pragma unroll
  for (int i = 0; i < 8; ++i) {{
    float* row = c + (long)(bm * 128 + ty * 8 + i) * N + bn * 128 + tx * 4;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {{
      row[j] = acc[i][j];
      row[64 + j] = acc[i][4 + j];
    }}
  }}
}}
"""

VEC = r"""
    #pragma unroll
    for (int kk = 0; kk < KC; kk += 4) {
      float4 ar[8];
      #pragma unroll
      for (int i = 0; i < 8; ++i) ar[i] = *reinterpret_cast<const float4*>(&as[s][ty * 8 + i][kk]);
      #pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 b0 = *reinterpret_cast<const float4*>(&bs[s][kk + q][tx * 4]);
        const float4 b1 = *reinterpret_cast<const float4*>(&bs[s][kk + q][tx * 4 + 64]);
        const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
        #pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float av = q == 0 ? ar[i].x : q == 1 ? ar[i].y : q == 2 ? ar[i].z : ar[i].w;
          #pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] += av * bv[j];
        }
      }
    }
"""

SCALAR = r"""
    #pragma unroll
    for (int kk = 0; kk < KC; ++kk) {
      float av[8], bv[8];
      #pragma unroll
      for (int i = 0; i < 8; ++i) av[i] = as[s][ty * 8 + i][kk];
      #pragma unroll
      for (int j = 0; j < 4; ++j) {
        bv[j] = bs[s][kk][tx * 4 + j];
        bv[4 + j] = bs[s][kk][tx * 4 + 64 + j];
      }
      #pragma unroll
      for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];
    }
"""

SYNC = r"""
#define N {n}
extern "C" __global__ void __launch_bounds__(256, 1) k_matmul(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c) {{
  __shared__ __align__(16) float at[8][132];
  __shared__ __align__(16) float bs[8][128];
  const int tid = threadIdx.x;
  const int bm = blockIdx.x / (N / 128), bn = blockIdx.x % (N / 128);
  const int ty = tid / 16, tx = tid % 16;
  float acc[8][8] = {{}};
  for (int kt = 0; kt < N / 8; ++kt) {{
    __syncthreads();
    const long brow = (long)(kt * 8 + tid / 32) * N, arow = (long)(bm * 128 + tid / 2) * N;
    const float4 bv4 = *reinterpret_cast<const float4*>(&b[brow + bn * 128 + tid % 32 * 4]);
    *reinterpret_cast<float4*>(&bs[tid / 32][tid % 32 * 4]) = bv4;
    const float4 av4 = *reinterpret_cast<const float4*>(&a[arow + kt * 8 + tid % 2 * 4]);
    at[tid % 2 * 4 + 0][tid / 2] = av4.x;
    at[tid % 2 * 4 + 1][tid / 2] = av4.y;
    at[tid % 2 * 4 + 2][tid / 2] = av4.z;
    at[tid % 2 * 4 + 3][tid / 2] = av4.w;
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < 8; ++k) {{
      float av[8], bv[8];
      #pragma unroll
      for (int i = 0; i < 8; ++i) av[i] = at[k][ty * 8 + i];
      #pragma unroll
      for (int j = 0; j < 4; ++j) {{
        bv[j] = bs[k][tx * 4 + j];
        bv[4 + j] = bs[k][tx * 4 + 64 + j];
      }}
      #pragma unroll
      for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];
    }}
  }}
  #pragma unroll
  for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j) {{
      c[(long)(bm * 128 + ty * 8 + i) * N + bn * 128 + tx * 4 + j] = acc[i][j];
      c[(long)(bm * 128 + ty * 8 + i) * N + bn * 128 + tx * 4 + 64 + j] = acc[i][4 + j];
    }}
}}
"""


def hand_sources(n: int) -> dict[str, str]:
    out = {"hand_sync": SYNC.format(n=n)}
    for read, body in (("vec", VEC), ("scalar", SCALAR)):
        for kc, stages in ((8, 2), (8, 3), (8, 4), (16, 2), (16, 3)):
            if stages * (128 * (kc + 4) + kc * 128) * 4 > 48 * 1024:
                continue
            out[f"hand_{read}_k{kc}_s{stages}"] = HAND.format(
                n=n, kc=kc, stages=stages, compute=body
            )
    return out


def unrolled(src: str, times: int) -> str:
    return re.sub(r"#pragma unroll 8\n(\s*for \(int a2_i)", f"#pragma unroll {times}\n\\1", src)


def main(out: str) -> None:
    import torch

    from deplodock.backends.cuda.emit import emit_kernel_sources
    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.dialects import make_context
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes import get_pass
    from deplodock.pipeline import PASSES_TO, lower

    torch.backends.cuda.matmul.allow_tf32 = False
    folder = Path(out)
    results = {}
    log = open(folder / "probe.txt", "w")
    for n in SIZES:
        expr = f"torch.matmul(torch.randn({n},{n}), torch.randn({n},{n}))"
        module = lower(import_program(capture_expression(expr).program).module, to="loop")
        ctx = make_context()
        for pass_name in (*PASSES_TO["tile"], *PASSES_TO["kernel"]):
            get_pass(pass_name)().apply(ctx, module)
        (source,) = emit_kernel_sources(module).values()
        (folder / f"generated_{n}.cu").write_text(source)
        variants = {"generated": source}
        for times in (4, 2, 1):
            variants[f"generated_u{times}"] = unrolled(source, times)
        variants.update(hand_sources(n))
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        ref = torch.matmul(a, b)
        candidates = {"cublas": lambda a=a, b=b: torch.matmul(a, b)}
        regs = {}
        for name, src in variants.items():
            (folder / f"{name}_{n}.cu").write_text(src)
            try:
                compiled = compile_kernels({"k_matmul": src}, arch="sm_90", cache=False, jobs=1)
            except Exception as error:  # a variant that does not compile is a finding
                print(n, name, "DOES NOT COMPILE", repr(error)[:2000], file=log, flush=True)
                continue
            res = compiled.resources["k_matmul"]
            regs[name] = (res.registers, res.spill_stores)
            program = CompiledProgram(module, compiled=compiled)
            got = program(a, b)[0]
            error = ((got - ref).abs().max() / ref.abs().max()).item()
            if error > 1e-4:
                print(n, name, "WRONG", error, file=log, flush=True)
                continue
            candidates[name] = lambda p=program, a=a, b=b: p(a, b, poison=False)
        calls = max(2, min(10, int(3e-3 / (2 * n**3 / 40e12))))
        timed = time_graphs(candidates, rounds=9, calls=calls)
        timings = {v: t.median_us for v, t in timed.items()}
        print(f"== square {n} cublas {timings['cublas']:.1f}", file=log)
        for name, us in sorted(timings.items(), key=lambda kv: kv[1]):
            ratio = timings["cublas"] / us
            print(f"   {name:24s} {us:9.1f} us {ratio:5.3f}x  {regs.get(name, '')}", file=log)
        log.flush()
        results[n] = {"timings": timings, "regs": regs}
    (folder / "probe.json").write_text(json.dumps(results, indent=1))
    log.close()
    print((folder / "probe.txt").read_text())


def once(n: int = 4096) -> None:
    """Run the generated kernel, one hand variant and cuBLAS once each (for ncu)."""
    import torch

    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.dialects import make_context
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes import get_pass
    from deplodock.pipeline import PASSES_TO, lower

    torch.backends.cuda.matmul.allow_tf32 = False
    expr = f"torch.matmul(torch.randn({n},{n}), torch.randn({n},{n}))"
    module = lower(import_program(capture_expression(expr).program).module, to="loop")
    ctx = make_context()
    for pass_name in (*PASSES_TO["tile"], *PASSES_TO["kernel"]):
        get_pass(pass_name)().apply(ctx, module)
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    CompiledProgram(module)(a, b)
    src = hand_sources(n)["hand_vec_k8_s3"]
    compiled = compile_kernels({"k_matmul": src}, arch="sm_90", cache=False, jobs=1)
    CompiledProgram(module, compiled=compiled)(a, b)
    torch.matmul(a, b)
    torch.cuda.synchronize()


if __name__ == "__main__":
    once() if sys.argv[1] == "--once" else main(sys.argv[1])
