// Session 41: fp32 attention on the tensor cores, written by hand as the next target for
// the compiler's walk (issue 20: head dim 128 at S=2048 runs at 0.66x eager; eager's fp32
// attention on sm_80+ is CUTLASS's memory-efficient kernel with OpMultiplyAddFastF32, i.e.
// 3xTF32 on the tensor cores, and the SIMT walk tops out near 23 TFLOP/s there).
//
// A block of WARPS warps keeps BM = 16 * WARPS query rows, 16 a warp (one m16 tile). Per
// chunk of BN keys staged in shared memory (K and V double-buffered by cp.async):
//   S[16, BN] = Q_w K^T      mma.sync m16n8k8 tf32, D/8 k-steps x BN/8 n-tiles
//   online softmax on the accumulator fragments (a row's 4 lanes: 2 shuffles)
//   P[16, BN] through the warp's shared-memory tile (C fragment -> A fragment)
//   O[16, D] = O * alpha + P V   BN/8 k-steps x D/8 n-tiles
// Each product is 3xTF32 (SPLIT=3): x = hi + lo, hi = tf32(x), lo = tf32(x - hi);
// a b ~ a_lo b_hi + a_hi b_lo + a_hi b_hi (the small terms first), fp32's accuracy;
// SPLIT=1 is plain TF32 (for the speed ceiling only: ~1e-3 error). Fragment layouts (PTX
// ISA, m16n8k8 .tf32; gid = lane / 4, t4 = lane % 4):
//   A (16x8): a0 (gid, t4), a1 (gid+8, t4), a2 (gid, t4+4), a3 (gid+8, t4+4)
//   B (8x8):  b0 (k=t4, n=gid), b1 (k=t4+4, n=gid)
//   C (16x8): c0 (gid, 2t4), c1 (gid, 2t4+1), c2 (gid+8, 2t4), c3 (gid+8, 2t4+1)
// Pitches keep every fragment load conflict-free: Q and K rows D+4 (bank 4 gid + t4), V
// rows D+8 (bank 8 t4 + gid), P rows BN+4. Causal: chunks past the block's last row never
// visited, query blocks longest first. q, k, v, o are [H(kv), S, D] (batch 1).

#ifndef D
#define D 128
#endif
#ifndef BN
#define BN 64
#endif
#ifndef WARPS
#define WARPS 4
#endif
#ifndef CAUSAL
#define CAUSAL 1
#endif
#ifndef SPLIT
#define SPLIT 3
#endif
#ifndef EXP2
#define EXP2 1  // 1: Q staged times scale * log2(e), weights by exp2f (0: scale each score, expf)
#endif
#ifndef QSPLIT
#define QSPLIT 0  // 1: Q split once as it is staged (its hi and lo words in shared memory)
#endif
#ifndef KVSPLIT
#define KVSPLIT 0  // 1: each K and V chunk split once by the block (hi in place, lo beside)
#endif
#define BM (16 * WARPS)
#define NT (32 * WARPS)
#define KP (D + 4)
#define VP (D + 8)
#define PP (BN + 4)
#define NEG_INF (-__int_as_float(0x7f800000))

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
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
// c += a b on one m16n8k8 tile (the warp's 32 lanes together)
__device__ __forceinline__ void mma(float* c, const unsigned* a, const unsigned* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

#ifndef FAST
#define FAST 1
#endif
// x as a tf32 pair: hi + lo (lo unused when SPLIT=1). FAST=0 rounds both by cvt.rna (on
// sm_90 ptxas expands it to an infinity test, an add and a select: ~7 instructions a
// value with the subtraction); FAST=1 (CUTLASS's big/small rounding for 3xTF32) adds half
// an ulp of tf32 to the bits and lets the tensor core drop the low 13, and passes the
// remainder as it is (truncated the same way): an add, a mask and a subtraction. Inputs
// are finite (an infinity's remainder would be NaN either way).
__device__ __forceinline__ void split(float x, unsigned& hi, unsigned& lo) {
#if FAST
  hi = __float_as_uint(x) + 0x1000u;
#if SPLIT == 3
  lo = __float_as_uint(x - __uint_as_float(hi & 0xffffe000u));
#else
  lo = 0;
#endif
#else
  hi = to_tf32(x);
#if SPLIT == 3
  lo = to_tf32(x - __uint_as_float(hi));
#else
  lo = 0;
#endif
#endif
}

// four consecutive elements split in place: hi words where they were, lo words to `lo`
__device__ __forceinline__ void split4(float* x, float* lo) {
  float4 v = *(float4*)x;
  unsigned h[4], l[4];
  split(v.x, h[0], l[0]);
  split(v.y, h[1], l[1]);
  split(v.z, h[2], l[2]);
  split(v.w, h[3], l[3]);
  *(float4*)x = make_float4(__uint_as_float(h[0]), __uint_as_float(h[1]), __uint_as_float(h[2]),
                            __uint_as_float(h[3]));
  *(float4*)lo = make_float4(__uint_as_float(l[0]), __uint_as_float(l[1]), __uint_as_float(l[2]),
                             __uint_as_float(l[3]));
}

__device__ __forceinline__ void mma3(float* c, const unsigned* ah, const unsigned* al,
                                     const unsigned* bh, const unsigned* bl) {
#if SPLIT == 3
  mma(c, al, bh);
  mma(c, ah, bl);
#endif
  mma(c, ah, bh);
}

// keys and values [k0, k0 + BN) into their buffers (zero past S), issued, not waited for
__device__ __forceinline__ void load_chunk(float* Ks, float* Vs, const float* kh, const float* vh,
                                           int k0, int S, int tid) {
  for (int f = tid; f < BN * D / 4; f += NT) {
    const int r = f / (D / 4), c = f % (D / 4) * 4;
    const bool inside = k0 + r < S;
    const size_t at = inside ? (size_t)(k0 + r) * D + c : 0;
    cp_async16(&Ks[r * KP + c], &kh[at], inside);
    cp_async16(&Vs[r * VP + c], &vh[at], inside);
  }
}

extern "C" __global__ void __launch_bounds__(NT) fa(const float* __restrict__ q,
                                                    const float* __restrict__ k,
                                                    const float* __restrict__ v,
                                                    float* __restrict__ out, int S, int H,
                                                    int HKV, float scale) {
  extern __shared__ __align__(16) float smem[];
  float* Qs = smem;                // [BM][KP]
  float* Ks = Qs + BM * KP;        // [2][BN][KP]
  float* Vs = Ks + 2 * BN * KP;    // [2][BN][VP]
  float* Ps = Vs + 2 * BN * VP;    // [WARPS][16][PP]
  float* Ql = Ps + WARPS * 16 * PP;  // [BM][KP] (QSPLIT: Q's lo words; Qs holds the hi)
  float* Kl = Ql + (QSPLIT ? BM * KP : 0);  // [BN][KP] (KVSPLIT: this chunk's lo words)
  float* Vl = Kl + BN * KP;                 // [BN][VP]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, gid = lane / 4, t4 = lane % 4;
  const int h = blockIdx.y, hk = h / (H / HKV);
  const int qb = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int row0 = qb * BM;
  const float* qh = q + (size_t)h * S * D;
  const float* kh = k + (size_t)hk * S * D;
  const float* vh = v + (size_t)hk * S * D;
  float* oh = out + (size_t)h * S * D;

  for (int f = tid; f < BM * D / 4; f += NT) {
    const int r = f / (D / 4), c = f % (D / 4) * 4;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row0 + r < S) x = *(const float4*)&qh[(size_t)(row0 + r) * D + c];
#if EXP2
    const float qs = scale * 1.4426950408889634f;
    x = make_float4(x.x * qs, x.y * qs, x.z * qs, x.w * qs);
#endif
#if QSPLIT
    unsigned h[4], lo[4];
    split(x.x, h[0], lo[0]);
    split(x.y, h[1], lo[1]);
    split(x.z, h[2], lo[2]);
    split(x.w, h[3], lo[3]);
    *(float4*)&Qs[r * KP + c] = make_float4(__uint_as_float(h[0]), __uint_as_float(h[1]),
                                            __uint_as_float(h[2]), __uint_as_float(h[3]));
    *(float4*)&Ql[r * KP + c] = make_float4(__uint_as_float(lo[0]), __uint_as_float(lo[1]),
                                            __uint_as_float(lo[2]), __uint_as_float(lo[3]));
#else
    *(float4*)&Qs[r * KP + c] = x;
#endif
  }
  const int kend = CAUSAL ? min(S, row0 + BM) : S;
  const int chunks = (kend + BN - 1) / BN;
  load_chunk(Ks, Vs, kh, vh, 0, S, tid);
  cp_async_commit();

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.f, 0.f};
  const int r0 = row0 + warp * 16 + gid;
  const float* Qw = Qs + warp * 16 * KP;
  float* Pw = Ps + warp * 16 * PP;

  for (int kc = 0; kc < chunks; ++kc) {
    const int buf = kc & 1;
    if (kc + 1 < chunks)
      load_chunk(Ks + (buf ^ 1) * BN * KP, Vs + (buf ^ 1) * BN * VP, kh, vh, (kc + 1) * BN, S, tid);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    float* Kb = Ks + buf * BN * KP;
    float* Vb = Vs + buf * BN * VP;
#if KVSPLIT
    for (int f = tid; f < BN * D / 4; f += NT) {
      const int r = f / (D / 4), c = f % (D / 4) * 4;
      split4(&Kb[r * KP + c], &Kl[r * KP + c]);
      split4(&Vb[r * VP + c], &Vl[r * VP + c]);
    }
    __syncthreads();
#endif

    float s[BN / 8][4];
#pragma unroll
    for (int n = 0; n < BN / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll 2
    for (int kk = 0; kk < D; kk += 8) {
      unsigned ah[4], al[4];
#if QSPLIT
      const float* Qlw = Ql + warp * 16 * KP;
      ah[0] = __float_as_uint(Qw[gid * KP + kk + t4]);
      ah[1] = __float_as_uint(Qw[(gid + 8) * KP + kk + t4]);
      ah[2] = __float_as_uint(Qw[gid * KP + kk + t4 + 4]);
      ah[3] = __float_as_uint(Qw[(gid + 8) * KP + kk + t4 + 4]);
      al[0] = __float_as_uint(Qlw[gid * KP + kk + t4]);
      al[1] = __float_as_uint(Qlw[(gid + 8) * KP + kk + t4]);
      al[2] = __float_as_uint(Qlw[gid * KP + kk + t4 + 4]);
      al[3] = __float_as_uint(Qlw[(gid + 8) * KP + kk + t4 + 4]);
#else
      split(Qw[gid * KP + kk + t4], ah[0], al[0]);
      split(Qw[(gid + 8) * KP + kk + t4], ah[1], al[1]);
      split(Qw[gid * KP + kk + t4 + 4], ah[2], al[2]);
      split(Qw[(gid + 8) * KP + kk + t4 + 4], ah[3], al[3]);
#endif
#pragma unroll
      for (int n = 0; n < BN / 8; ++n) {
        unsigned bh[2], bl[2];
#if KVSPLIT
        bh[0] = __float_as_uint(Kb[(n * 8 + gid) * KP + kk + t4]);
        bh[1] = __float_as_uint(Kb[(n * 8 + gid) * KP + kk + t4 + 4]);
        bl[0] = __float_as_uint(Kl[(n * 8 + gid) * KP + kk + t4]);
        bl[1] = __float_as_uint(Kl[(n * 8 + gid) * KP + kk + t4 + 4]);
#else
        split(Kb[(n * 8 + gid) * KP + kk + t4], bh[0], bl[0]);
        split(Kb[(n * 8 + gid) * KP + kk + t4 + 4], bh[1], bl[1]);
#endif
        mma3(s[n], ah, al, bh, bl);
      }
    }

    // scale and masks; each row's chunk maximum across its quad
    float mx[2] = {NEG_INF, NEG_INF};
#pragma unroll
    for (int n = 0; n < BN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = kc * BN + n * 8 + 2 * t4 + (e & 1), row = r0 + 8 * (e >> 1);
        float x = EXP2 ? s[n][e] : s[n][e] * scale;
        if (key >= S || (CAUSAL && key > row)) x = NEG_INF;
        s[n][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
    float mu[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffff, mx[i], 1));
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffff, mx[i], 2));
      const float mn = fmaxf(m[i], mx[i]);
      mu[i] = mn == NEG_INF ? 0.f : mn;  // a row with no key yet: weights exp(-inf) = 0
      const float alpha = EXP2 ? exp2f(m[i] - mu[i]) : expf(m[i] - mu[i]);
      m[i] = mn;
      l[i] *= alpha;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][2 * i] *= alpha;
        o[n][2 * i + 1] *= alpha;
      }
    }
#pragma unroll
    for (int n = 0; n < BN / 8; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float p0 = EXP2 ? exp2f(s[n][2 * i] - mu[i]) : expf(s[n][2 * i] - mu[i]);
        const float p1 = EXP2 ? exp2f(s[n][2 * i + 1] - mu[i]) : expf(s[n][2 * i + 1] - mu[i]);
        l[i] += p0 + p1;
        *(float2*)&Pw[(gid + 8 * i) * PP + n * 8 + 2 * t4] = make_float2(p0, p1);
      }
    __syncwarp();

#pragma unroll 2
    for (int kk = 0; kk < BN; kk += 8) {
      unsigned ah[4], al[4];
      split(Pw[gid * PP + kk + t4], ah[0], al[0]);
      split(Pw[(gid + 8) * PP + kk + t4], ah[1], al[1]);
      split(Pw[gid * PP + kk + t4 + 4], ah[2], al[2]);
      split(Pw[(gid + 8) * PP + kk + t4 + 4], ah[3], al[3]);
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        unsigned bh[2], bl[2];
#if KVSPLIT
        bh[0] = __float_as_uint(Vb[(kk + t4) * VP + n * 8 + gid]);
        bh[1] = __float_as_uint(Vb[(kk + t4 + 4) * VP + n * 8 + gid]);
        bl[0] = __float_as_uint(Vl[(kk + t4) * VP + n * 8 + gid]);
        bl[1] = __float_as_uint(Vl[(kk + t4 + 4) * VP + n * 8 + gid]);
#else
        split(Vb[(kk + t4) * VP + n * 8 + gid], bh[0], bl[0]);
        split(Vb[(kk + t4 + 4) * VP + n * 8 + gid], bh[1], bl[1]);
#endif
        mma3(o[n], ah, al, bh, bl);
      }
    }
    __syncwarp();
    __syncthreads();  // the buffers of chunk kc are refilled by the next iteration's copies
  }

#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffff, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffff, l[i], 2);
    const int row = r0 + 8 * i;
    if (row < S) {
      const float inv = 1.f / l[i];
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        *(float2*)&oh[(size_t)row * D + n * 8 + 2 * t4] =
            make_float2(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
    }
  }
}
