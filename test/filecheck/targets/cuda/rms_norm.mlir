// RUN: deplo-opt %s -t cuda | filecheck %s

// The RMSNorm kernel of the article (materialize's output) as CUDA C: one block per row,
// a strided sum of squares, the warp butterfly, the tree over warps in shared memory, then
// the strided normalising loop. Every SSA value is a const local named from its hint.

builtin.module {
  func.func @forward(%x: tensor<1x32x2048xf32>, %p_weight: tensor<2048xf32>) -> tensor<1x32x2048xf32> {
    %y = kernel.kernel @k_rms_norm grid(32, 1, 1) block(256, 1, 1) ins(%xb = %x : tensor<1x32x2048xf32>, %wb = %p_weight : tensor<2048xf32>) outs(%yb : tensor<1x32x2048xf32>) {
      %ss_smem = kernel.shared "ss_smem" : memref<8xf32>
      %t = kernel.thread_id x
      %a0 = kernel.block_id x
      %lane = affine.apply affine_map<(d0) -> ((d0 mod 32))> (%t)
      %warp = affine.apply affine_map<(d0) -> ((d0 floordiv 32))> (%t)
      %ss_part = kernel.for %a1 = %t to 2048 step 256 reduce(add) -> f32 {
        %v = kernel.load %xb[0, %a0, %a1] : memref<1x32x2048xf32>
        %q = arith.mulf %v, %v : f32
        kernel.yield %q : f32
      }
      %ss_x16 = kernel.shfl_xor %ss_part, 16 : f32
      %ss_w = arith.addf %ss_part, %ss_x16 : f32
      %ss_x8 = kernel.shfl_xor %ss_w, 8 : f32
      %ss_w_1 = arith.addf %ss_w, %ss_x8 : f32
      %ss_x4 = kernel.shfl_xor %ss_w_1, 4 : f32
      %ss_w_2 = arith.addf %ss_w_1, %ss_x4 : f32
      %ss_x2 = kernel.shfl_xor %ss_w_2, 2 : f32
      %ss_w_3 = arith.addf %ss_w_2, %ss_x2 : f32
      %ss_x1 = kernel.shfl_xor %ss_w_3, 1 : f32
      %ss_w_4 = arith.addf %ss_w_3, %ss_x1 : f32
      %c0 = arith.constant 0 : index
      %lane0 = arith.cmpi eq, %lane, %c0 : index
      scf.if %lane0 {
        kernel.store %ss_w_4, %ss_smem[%warp] : memref<8xf32>
      }
      kernel.barrier
      %c4 = arith.constant 4 : index
      %active = arith.cmpi ult, %warp, %c4 : index
      scf.if %active {
        %ss_a = kernel.load %ss_smem[%warp] : memref<8xf32>
        %ss_b = kernel.load %ss_smem[(%warp + 4) mod 8] : memref<8xf32>
        %ss_ab = arith.addf %ss_a, %ss_b : f32
        kernel.store %ss_ab, %ss_smem[%warp] : memref<8xf32>
      }
      kernel.barrier
      %c2 = arith.constant 2 : index
      %active_1 = arith.cmpi ult, %warp, %c2 : index
      scf.if %active_1 {
        %ss_a_1 = kernel.load %ss_smem[%warp] : memref<8xf32>
        %ss_b_1 = kernel.load %ss_smem[(%warp + 2) mod 8] : memref<8xf32>
        %ss_ab_1 = arith.addf %ss_a_1, %ss_b_1 : f32
        kernel.store %ss_ab_1, %ss_smem[%warp] : memref<8xf32>
      }
      kernel.barrier
      %c1 = arith.constant 1 : index
      %active_2 = arith.cmpi ult, %warp, %c1 : index
      scf.if %active_2 {
        %ss_a_2 = kernel.load %ss_smem[%warp] : memref<8xf32>
        %ss_b_2 = kernel.load %ss_smem[(%warp + 1) mod 8] : memref<8xf32>
        %ss_ab_2 = arith.addf %ss_a_2, %ss_b_2 : f32
        kernel.store %ss_ab_2, %ss_smem[%warp] : memref<8xf32>
      }
      kernel.barrier
      %ss = kernel.load %ss_smem[0] : memref<8xf32>
      %n = arith.constant 0.00048828125 : f32
      %m = arith.mulf %ss, %n : f32
      %eps = arith.constant 1.000000e-06 : f32
      %s = arith.addf %m, %eps : f32
      %r = math.rsqrt %s : f32
      kernel.for %a2 = %t to 2048 step 256 {
        %v2 = kernel.load %xb[0, %a0, %a2] : memref<1x32x2048xf32>
        %w = kernel.load %wb[%a2] : memref<2048xf32>
        %h = arith.mulf %v2, %r : f32
        %o = arith.mulf %h, %w : f32
        kernel.store %o, %yb[0, %a0, %a2] : memref<1x32x2048xf32>
      }
    }
    func.return %y : tensor<1x32x2048xf32>
  }
}


// CHECK:      // grid (32, 1, 1), block (256, 1, 1)
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(256) k_rms_norm(
// CHECK-NEXT:     const float* __restrict__ xb,
// CHECK-NEXT:     const float* __restrict__ wb,
// CHECK-NEXT:     float* __restrict__ yb) {
// CHECK-NEXT: #if __CUDA_ARCH__ >= 900
// CHECK-NEXT:   asm volatile("griddepcontrol.wait;" ::: "memory");
// CHECK-NEXT: #endif
// CHECK-NEXT:   __shared__ __align__(16) float ss_smem[8];
// CHECK-NEXT:   const int t = threadIdx.x;
// CHECK-NEXT:   const int a0 = blockIdx.x;
// CHECK-NEXT:   const int lane = t % 32;
// CHECK-NEXT:   const int warp = t / 32;
// CHECK-NEXT:   float ss_part = 0.0f;
// CHECK-NEXT:   for (int a1_j = 0; a1_j < 8; ++a1_j) {
// CHECK-NEXT:     const int a1 = t + a1_j * 256;
// CHECK-NEXT:     const float v = xb[a0 * 2048 + a1];
// CHECK-NEXT:     const float q = v * v;
// CHECK-NEXT:     ss_part = ss_part + q;
// CHECK-NEXT:   }
// CHECK-NEXT:   const float ss_x16 = __shfl_xor_sync(0xffffffff, ss_part, 16);
// CHECK-NEXT:   const float ss_w = ss_part + ss_x16;
// CHECK-NEXT:   const float ss_x8 = __shfl_xor_sync(0xffffffff, ss_w, 8);
// CHECK-NEXT:   const float ss_w_1 = ss_w + ss_x8;
// CHECK-NEXT:   const float ss_x4 = __shfl_xor_sync(0xffffffff, ss_w_1, 4);
// CHECK-NEXT:   const float ss_w_2 = ss_w_1 + ss_x4;
// CHECK-NEXT:   const float ss_x2 = __shfl_xor_sync(0xffffffff, ss_w_2, 2);
// CHECK-NEXT:   const float ss_w_3 = ss_w_2 + ss_x2;
// CHECK-NEXT:   const float ss_x1 = __shfl_xor_sync(0xffffffff, ss_w_3, 1);
// CHECK-NEXT:   const float ss_w_4 = ss_w_3 + ss_x1;
// CHECK-NEXT:   const bool lane0 = lane == 0;
// CHECK-NEXT:   if (lane0) {
// CHECK-NEXT:     ss_smem[warp] = ss_w_4;
// CHECK-NEXT:   }
// CHECK-NEXT:   __syncthreads();
// CHECK-NEXT:   const bool active = warp < 4;
// CHECK-NEXT:   if (active) {
// CHECK-NEXT:     const float ss_a = ss_smem[warp];
// CHECK-NEXT:     const float ss_b = ss_smem[(warp + 4) % 8];
// CHECK-NEXT:     const float ss_ab = ss_a + ss_b;
// CHECK-NEXT:     ss_smem[warp] = ss_ab;
// CHECK-NEXT:   }
// CHECK-NEXT:   __syncthreads();
// CHECK-NEXT:   const bool active_1 = warp < 2;
// CHECK-NEXT:   if (active_1) {
// CHECK-NEXT:     const float ss_a_1 = ss_smem[warp];
// CHECK-NEXT:     const float ss_b_1 = ss_smem[(warp + 2) % 8];
// CHECK-NEXT:     const float ss_ab_1 = ss_a_1 + ss_b_1;
// CHECK-NEXT:     ss_smem[warp] = ss_ab_1;
// CHECK-NEXT:   }
// CHECK-NEXT:   __syncthreads();
// CHECK-NEXT:   const bool active_2 = warp < 1;
// CHECK-NEXT:   if (active_2) {
// CHECK-NEXT:     const float ss_a_2 = ss_smem[warp];
// CHECK-NEXT:     const float ss_b_2 = ss_smem[(warp + 1) % 8];
// CHECK-NEXT:     const float ss_ab_2 = ss_a_2 + ss_b_2;
// CHECK-NEXT:     ss_smem[warp] = ss_ab_2;
// CHECK-NEXT:   }
// CHECK-NEXT:   __syncthreads();
// CHECK-NEXT:   const float ss = ss_smem[0];
// CHECK-NEXT:   const float m = ss * 0.00048828125f;
// CHECK-NEXT:   const float s = m + 1e-06f;
// CHECK-NEXT:   const float r = rsqrtf(s);
// CHECK-NEXT:   for (int a2_j = 0; a2_j < 8; ++a2_j) {
// CHECK-NEXT:     const int a2 = t + a2_j * 256;
// CHECK-NEXT:     const float v2 = xb[a0 * 2048 + a2];
// CHECK-NEXT:     const float w = wb[a2];
// CHECK-NEXT:     const float h = v2 * r;
// CHECK-NEXT:     const float o = h * w;
// CHECK-NEXT:     yb[a0 * 2048 + a2] = o;
// CHECK-NEXT:   }
// CHECK-NEXT: {{^}}}
