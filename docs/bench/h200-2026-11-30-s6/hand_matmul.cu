// N, KC, STAGES, MIXED defined before
#define AS (KC + 4)
__device__ __forceinline__ void cp16(unsigned smem, const float* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem), "l"(gmem) : "memory");
}
extern "C" __global__ void __launch_bounds__(256, 2) k_matmul(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c) {
#if MIXED
  __shared__ __align__(16) float as[STAGES * KC * 132];  // transposed [k][m], row 132
#else
  __shared__ __align__(16) float as[STAGES * 128 * AS];  // source order [m][k]
#endif
  __shared__ __align__(16) float bs[STAGES * KC * 128];
  const int tid = threadIdx.x;
  const int bm = blockIdx.x / (N / 128), bn = blockIdx.x % (N / 128);
  const int ty = tid / 16, tx = tid % 16;
  // Each thread copies KC/8 float4 of each slab per chunk.
  const float* a_src = a + (long)(bm * 128 + tid / (KC / 4)) * N + tid % (KC / 4) * 4;
  const float* b_src = b + (long)(tid / 32) * N + bn * 128 + tid % 32 * 4;
  const unsigned b_dst = (unsigned)__cvta_generic_to_shared(&bs[tid / 32 * 128 + tid % 32 * 4]);
#if MIXED
  float* a_dst = &as[tid % (KC / 4) * 4 * 132 + tid / (KC / 4)];
#else
  const unsigned a_dst = (unsigned)__cvta_generic_to_shared(&as[tid / (KC / 4) * AS + tid % (KC / 4) * 4]);
#endif
  float acc[8][8];
  #pragma unroll
  for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
#if MIXED
  float4 pre[KC / 8];
  #define LOAD_A(k0) _Pragma("unroll") for (int r = 0; r < KC / 8; ++r) \
      pre[r] = *reinterpret_cast<const float4*>(a_src + (long)r * (256 / (KC / 4)) * N + (k0));
  #define STORE_A(s) _Pragma("unroll") for (int r = 0; r < KC / 8; ++r) { \
      float* d = a_dst + (s) * KC * 132 + r * (256 / (KC / 4)); \
      d[0] = pre[r].x; d[132] = pre[r].y; d[264] = pre[r].z; d[396] = pre[r].w; }
#else
  #define LOAD_A(k0)
  #define STORE_A(s)
#endif
  auto fill = [&](int s, int k0) {
#if !MIXED
    #pragma unroll
    for (int r = 0; r < KC / 8; ++r)
      cp16(a_dst + (s * 128 * AS + r * (256 / (KC / 4)) * AS) * 4, a_src + (long)r * (256 / (KC / 4)) * N + k0);
#endif
    #pragma unroll
    for (int r = 0; r < KC / 8; ++r)
      cp16(b_dst + (s * KC * 128 + r * 8 * 128) * 4, b_src + (long)(k0 + r * 8) * N);
  };
  #pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    fill(s, s * KC);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  LOAD_A(0);
  STORE_A(0);
  int s = 0, f = STAGES - 1;
  for (int kt = 0; kt < N / KC; ++kt) {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory");
    __syncthreads();
    if (kt + STAGES - 1 < N / KC) fill(f, (kt + STAGES - 1) * KC);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    if (kt + 1 < N / KC) { LOAD_A((kt + 1) * KC); }
    const float* bt = bs + s * KC * 128 + tx * 4;
#if MIXED
    const float* at = as + s * KC * 132 + ty * 8;
    #pragma unroll
    for (int k = 0; k < KC; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(at + k * 132);
      const float4 a1 = *reinterpret_cast<const float4*>(at + k * 132 + 4);
      const float4 b0 = *reinterpret_cast<const float4*>(bt + k * 128);
      const float4 b1 = *reinterpret_cast<const float4*>(bt + k * 128 + 64);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
      #pragma unroll
      for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];
    }
    // The next chunk's a slab: its buffer was last read in chunk kt + 1 - STAGES.
    if (kt + 1 < N / KC) { STORE_A((s + 1) % STAGES); }
#else
    const float* at = as + s * 128 * AS + ty * 8 * AS;
    #pragma unroll
    for (int kk = 0; kk < KC; kk += 4) {
      float4 ar[8];
      #pragma unroll
      for (int i = 0; i < 8; ++i) ar[i] = *reinterpret_cast<const float4*>(at + i * AS + kk);
      #pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 b0 = *reinterpret_cast<const float4*>(bt + (kk + q) * 128);
        const float4 b1 = *reinterpret_cast<const float4*>(bt + (kk + q) * 128 + 64);
        const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
        #pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float av = q == 0 ? ar[i].x : q == 1 ? ar[i].y : q == 2 ? ar[i].z : ar[i].w;
          #pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] += av * bv[j];
        }
      }
    }
#endif
    s = s + 1 == STAGES ? 0 : s + 1;
    f = f + 1 == STAGES ? 0 : f + 1;
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i) {
    float* row = c + (long)(bm * 128 + ty * 8 + i) * N + bn * 128 + tx * 4;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
      row[j] = acc[i][j];
      row[64 + j] = acc[i][4 + j];
    }
  }
}
