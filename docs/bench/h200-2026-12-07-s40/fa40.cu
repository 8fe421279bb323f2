// Session 38: a register-tiled fp32 attention walk, written by hand as a target for the
// compiler's (issue 20: head dim 128 at S=2048 runs at 0.49x eager, 16 TFLOP/s of causal
// work; a thread there keeps one or two query rows with a warp's lanes on the head dim, so
// every score is a shuffle reduction). Here a block of NT = BM / 4 * 8 threads keeps BM
// query rows; thread (ty, tx) computes a 4 x KC micro-tile of each BN-key chunk's scores,
// rows ty*4 .. ty*4+3, keys tx, tx+8, .., from Q and K tiles in shared memory (float4
// reads along the head dim, conflict-free: a quarter warp reads 8 consecutive padded rows),
// then the online softmax of its rows (max and rescale across the 8 lanes of a row by 3
// shuffles a row a chunk; the row sum kept per thread, added across lanes at the end),
// the probabilities to shared memory (transposed: P[key][row]), and its 4 x D/8 micro-tile
// of the output accumulates P V from there (float4 reads of V's rows). Causal: chunks past
// the diagonal are never visited, the diagonal's masked; query blocks longest first.
// ASYNC=1 double-buffers the K and V chunks by 16-byte cp.async (zero-filled past S): chunk
// t+1 is in flight while chunk t is computed. Compile with -D D=.. -D BM=.. -D BN=..
// -D CAUSAL=.. -D ASYNC=..; q, k, v, o are [B, H(kv), S, D].

#ifndef D
#define D 128
#endif
#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef CAUSAL
#define CAUSAL 1
#endif
#ifndef ASYNC
#define ASYNC 0
#endif
#ifndef PSHFL
#define PSHFL 0  // 1: each key's probabilities from the lane that computed them (__shfl_sync)
#endif
#ifndef DUNROLL
#define DUNROLL 4  // the score loop's unrolling over the head dim, in float4 steps
#endif
#ifndef TX
#define TX 8  // lanes a row group: its keys' scores, then its head-dim strips
#endif
// Session 40: the generated walk's differences from this kernel, one switch each (0: as
// written by hand; 1: as tile-walk emits it), to find which of them cost time.
#ifndef GSCALE
#define GSCALE 0  // the scale applied to each score (not to Q once, while it is staged)
#endif
#ifndef GWEIGHT
#define GWEIGHT 0  // weights by the batch rule: (s == max) ? 1 : exp(s - max), a compare a score
                   // (2: exp(s == max ? 0 : s - max), the select before the exp)
#endif
#ifndef GMERGE
#define GMERGE 0  // P V into a chunk's own accumulators, merged by the online rule after
                  // (2: the merge without a branch)
#endif
#ifndef SCALARP
#define SCALARP 0  // P stored by 4 scalar stores a key, not one float4
#endif
#ifndef XSYNC
#define XSYNC 0  // a barrier before P's stores (tile.share's first barrier)
#endif
#define TY (BM / 4)
#define NT (TY * TX)
#define KC (BN / TX)
#define DP (D + 4)
#define PP (BM + 4)
#define NC (D / (4 * TX))
#define NEG_INF (-__int_as_float(0x7f800000))
#define KV_BUFFERS (ASYNC ? 2 : 1)

#ifdef __CUDACC__
__device__ __forceinline__ void cp_async16(float* dst, const float* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                   (unsigned)__cvta_generic_to_shared(dst)),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

// Chunk t of the keys and values into buffer `buf` (ASYNC: issued, not waited for).
__device__ __forceinline__ void load_chunk(float* Ks, float* Vs, const float* kh, const float* vh,
                                           int k0, int S, int tid) {
  for (int f = tid; f < BN * D / 4; f += NT) {
    const int r = f / (D / 4), c4 = f % (D / 4);
    const bool inside = k0 + r < S;
    const size_t at = inside ? (size_t)(k0 + r) * D + c4 * 4 : 0;
#if ASYNC
    cp_async16(&Ks[r * DP + c4 * 4], &kh[at], inside);
    cp_async16(&Vs[r * DP + c4 * 4], &vh[at], inside);
#else
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f), y = x;
    if (inside) {
      x = *(const float4*)&kh[at];
      y = *(const float4*)&vh[at];
    }
    *(float4*)&Ks[r * DP + c4 * 4] = x;
    *(float4*)&Vs[r * DP + c4 * 4] = y;
#endif
  }
}

extern "C" __global__ void __launch_bounds__(NT) fa(
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
    float* __restrict__ o, int S, int H, int HKV, float scale) {
  extern __shared__ __align__(16) float smem[];
  float* Qs = smem;
  float* Kb = Qs + BM * DP;            // KV_BUFFERS chunks of keys
  float* Vb = Kb + KV_BUFFERS * BN * DP;  // and of values
  float* Ps = Vb + KV_BUFFERS * BN * DP;
  const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
  const int qb = CAUSAL ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (H / HKV);
  const int q0 = qb * BM;
  const float* qh = q + (size_t)(b * H + h) * S * D;
  const float* kh = k + (size_t)(b * HKV + hk) * S * D;
  const float* vh = v + (size_t)(b * HKV + hk) * S * D;
  for (int f = tid; f < BM * D / 4; f += NT) {
    const int r = f / (D / 4), c4 = f % (D / 4);
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (q0 + r < S) x = *(const float4*)&qh[(size_t)(q0 + r) * D + c4 * 4];
#if !GSCALE
    x.x *= scale; x.y *= scale; x.z *= scale; x.w *= scale;
#endif
    *(float4*)&Qs[r * DP + c4 * 4] = x;
  }
  float acc[4][NC][4];
  float m[4], l[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    m[r] = NEG_INF;
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < NC; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[r][c][e] = 0.f;
  }
#if GMERGE
  float pacc[4][NC][4];
#endif
  const int kend = CAUSAL ? min(S, q0 + BM) : S;
  const int chunks = (kend + BN - 1) / BN;
#if ASYNC
  load_chunk(Kb, Vb, kh, vh, 0, S, tid);
  cp_async_commit();
#endif
  for (int t = 0; t < chunks; ++t) {
    const int k0 = t * BN;
    const int buf = ASYNC ? t % 2 : 0;
    const float* Ks = Kb + buf * BN * DP;
    const float* Vs = Vb + buf * BN * DP;
    __syncthreads();  // chunk t-1's reads of K, V and P are done (and Q is stored)
#if ASYNC
    if (t + 1 < chunks) {
      load_chunk(Kb + (1 - buf) * BN * DP, Vb + (1 - buf) * BN * DP, kh, vh, k0 + BN, S, tid);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
#else
    load_chunk(Kb, Vb, kh, vh, k0, S, tid);
#endif
    __syncthreads();
    float s[4][KC];
#if GMERGE
    float cmax[4], csum[4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) pacc[r][c][e] = 0.f;
#define ACC pacc
#else
#define ACC acc
#endif
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < KC; ++c) s[r][c] = 0.f;
#pragma unroll DUNROLL
    for (int d4 = 0; d4 < D / 4; ++d4) {
      float4 qa[4], kk[KC];
#pragma unroll
      for (int r = 0; r < 4; ++r) qa[r] = *(const float4*)&Qs[(ty * 4 + r) * DP + d4 * 4];
#pragma unroll
      for (int c = 0; c < KC; ++c) kk[c] = *(const float4*)&Ks[(tx + TX * c) * DP + d4 * 4];
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < KC; ++c) {
          s[r][c] = fmaf(qa[r].x, kk[c].x, s[r][c]);
          s[r][c] = fmaf(qa[r].y, kk[c].y, s[r][c]);
          s[r][c] = fmaf(qa[r].z, kk[c].z, s[r][c]);
          s[r][c] = fmaf(qa[r].w, kk[c].w, s[r][c]);
        }
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = q0 + ty * 4 + r;
      float mx = NEG_INF;
#pragma unroll
      for (int c = 0; c < KC; ++c) {
        const int key = k0 + tx + TX * c;
#if GSCALE
        s[r][c] *= scale;
#endif
        if (key >= S || (CAUSAL && key > row)) s[r][c] = NEG_INF;
        mx = fmaxf(mx, s[r][c]);
      }
#pragma unroll
      for (int o = 1; o < TX; o *= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
#if GMERGE
      const float mref = mx;  // weights against the chunk's own max; merged after P V
      cmax[r] = mx;
#else
      const float mnew = fmaxf(m[r], mx);
      const float alpha = expf(m[r] - mnew);
      m[r] = mnew;
      const float mref = mnew;
#endif
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < KC; ++c) {
#if GWEIGHT == 2
        const float p = expf(s[r][c] == mref ? 0.f : s[r][c] - mref);
#elif GWEIGHT
        const float p = s[r][c] == mref ? 1.f : expf(s[r][c] - mref);
#else
        const float p = expf(s[r][c] - mref);
#endif
        s[r][c] = p;
        sum += p;
      }
#if GMERGE
      csum[r] = sum;
#else
      l[r] = l[r] * alpha + sum;
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[r][c][e] *= alpha;
#endif
    }
#if PSHFL
#pragma unroll
    for (int j = 0; j < BN; ++j) {
      float pr[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) pr[r] = __shfl_sync(0xffffffffu, s[r][j / TX], j % TX, TX);
#else
#if XSYNC
    __syncthreads();
#endif
#pragma unroll
    for (int c = 0; c < KC; ++c) {
#if SCALARP
#pragma unroll
      for (int r = 0; r < 4; ++r) Ps[(tx + TX * c) * PP + ty * 4 + r] = s[r][c];
#else
      *(float4*)&Ps[(tx + TX * c) * PP + ty * 4] = make_float4(s[0][c], s[1][c], s[2][c], s[3][c]);
#endif
    }
    __syncthreads();
#pragma unroll 4
    for (int j = 0; j < BN; ++j) {
      const float4 p = *(const float4*)&Ps[j * PP + ty * 4];
      const float pr[4] = {p.x, p.y, p.z, p.w};
#endif
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const float4 vv = *(const float4*)&Vs[j * DP + c * 4 * TX + tx * 4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          ACC[r][c][0] = fmaf(pr[r], vv.x, ACC[r][c][0]);
          ACC[r][c][1] = fmaf(pr[r], vv.y, ACC[r][c][1]);
          ACC[r][c][2] = fmaf(pr[r], vv.z, ACC[r][c][2]);
          ACC[r][c][3] = fmaf(pr[r], vv.w, ACC[r][c][3]);
        }
      }
    }
#if GMERGE
    // the online rule, as materialize writes it: the larger max keeps its side
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float sc = (cmax[r] == m[r] && m[r] == NEG_INF) ? 1.f : expf(-fabsf(cmax[r] - m[r]));
#if GMERGE == 2  // the same rule without a branch: each side's factor selected
      const bool up = cmax[r] > m[r];
      const float sa = up ? sc : 1.f, sv = up ? 1.f : sc;
      l[r] = l[r] * sa + csum[r] * sv;
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[r][c][e] = acc[r][c][e] * sa + pacc[r][c][e] * sv;
      m[r] = up ? cmax[r] : m[r];
#else
      if (cmax[r] > m[r]) {
        l[r] = l[r] * sc + csum[r];
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[r][c][e] = acc[r][c][e] * sc + pacc[r][c][e];
        m[r] = cmax[r];
      } else {
        l[r] = l[r] + csum[r] * sc;
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[r][c][e] = acc[r][c][e] + pacc[r][c][e] * sc;
      }
#endif
    }
#endif
  }
  float* oh = o + (size_t)(b * H + h) * S * D;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    float sum = l[r];
#pragma unroll
    for (int o = 1; o < TX; o *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = 1.f / sum;
    const int row = q0 + ty * 4 + r;
    if (row < S) {
#pragma unroll
      for (int c = 0; c < NC; ++c)
        *(float4*)&oh[(size_t)row * D + c * 4 * TX + tx * 4] = make_float4(
            acc[r][c][0] * inv, acc[r][c][1] * inv, acc[r][c][2] * inv, acc[r][c][3] * inv);
    }
  }
}
