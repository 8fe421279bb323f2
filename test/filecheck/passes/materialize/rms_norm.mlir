// RUN: deplo-opt %s -p materialize | filecheck %s

// The article's RMSNorm schedule in hardware primitives: one block per row (blockIdx.x is
// the row), 256 threads (threadIdx.x is the strided loops' start); the combine becomes a
// warp butterfly, one shared slot per warp, one barrier, and every thread sums the 8
// slots in order.

func.func @forward(%x: tensor<1x32x2048xf32>, %p_weight: tensor<2048xf32>) -> tensor<1x32x2048xf32> {
  %y = tile.kernel @k_rms_norm axes(%t : 256 = thread, %a0 : 32 = block) ins(%xb = %x : tensor<1x32x2048xf32>, %wb = %p_weight : tensor<2048xf32>) outs(%yb : tensor<1x32x2048xf32>) {
    %ss_part = tile.strided_for %a1 = %t to 2048 step 256 reduce(add) -> f32 {
      %v = loop.load %xb[0, %a0, %a1] : memref<1x32x2048xf32>
      %q = arith.mulf %v, %v : f32
      loop.yield %q : f32
    }
    %ss = tile.combine add %ss_part across %t : f32
    %n = arith.constant 4.8828125e-04 : f32
    %m = arith.mulf %ss, %n : f32
    %eps = arith.constant 1.0e-06 : f32
    %s = arith.addf %m, %eps : f32
    %r = math.rsqrt %s : f32
    tile.strided_for %a2 = %t to 2048 step 256 {
      %v2 = loop.load %xb[0, %a0, %a2] : memref<1x32x2048xf32>
      %w = loop.load %wb[%a2] : memref<2048xf32>
      %h = arith.mulf %v2, %r : f32
      %o = arith.mulf %h, %w : f32
      loop.store %o, %yb[0, %a0, %a2] : memref<1x32x2048xf32>
    }
  }
  func.return %y : tensor<1x32x2048xf32>
}

// CHECK:      %y = kernel.kernel @k_rms_norm grid(32, 1, 1) block(256, 1, 1) ins(%xb = %x : tensor<1x32x2048xf32>, %wb = %p_weight : tensor<2048xf32>) outs(%yb : tensor<1x32x2048xf32>) {
// CHECK-NEXT:   %ss_smem = kernel.shared "ss_smem" : memref<8xf32>
// CHECK-NEXT:   %t = kernel.thread_id x
// CHECK-NEXT:   %a0 = kernel.block_id x
// CHECK-NEXT:   %lane = affine.apply affine_map<(d0) -> ((d0 mod 32))> (%t)
// CHECK-NEXT:   %warp = affine.apply affine_map<(d0) -> ((d0 floordiv 32))> (%t)
// CHECK-NEXT:   %ss_part = kernel.for %a1 = %t to 2048 step 256 reduce(add) -> f32 {
// CHECK-NEXT:     %v = kernel.load %xb[0, %a0, %a1] : memref<1x32x2048xf32>
// CHECK-NEXT:     %q = arith.mulf %v, %v : f32
// CHECK-NEXT:     kernel.yield %q : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %ss_x16 = kernel.shfl_xor %ss_part, 16 : f32
// CHECK-NEXT:   %ss_w = arith.addf %ss_part, %ss_x16 : f32
// CHECK-NEXT:   %ss_x8 = kernel.shfl_xor %ss_w, 8 : f32
// CHECK-NEXT:   %ss_w_1 = arith.addf %ss_w, %ss_x8 : f32
// CHECK-NEXT:   %ss_x4 = kernel.shfl_xor %ss_w_1, 4 : f32
// CHECK-NEXT:   %ss_w_2 = arith.addf %ss_w_1, %ss_x4 : f32
// CHECK-NEXT:   %ss_x2 = kernel.shfl_xor %ss_w_2, 2 : f32
// CHECK-NEXT:   %ss_w_3 = arith.addf %ss_w_2, %ss_x2 : f32
// CHECK-NEXT:   %ss_x1 = kernel.shfl_xor %ss_w_3, 1 : f32
// CHECK-NEXT:   %ss_w_4 = arith.addf %ss_w_3, %ss_x1 : f32
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %lane0 = arith.cmpi eq, %lane, %c0 : index
// CHECK-NEXT:   scf.if %lane0 {
// CHECK-NEXT:     kernel.store %ss_w_4, %ss_smem[%warp] : memref<8xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   kernel.barrier
// CHECK-NEXT:   %ss_p0 = kernel.load %ss_smem[0] : memref<8xf32>
// CHECK-NEXT:   %ss_p1 = kernel.load %ss_smem[1] : memref<8xf32>
// CHECK-NEXT:   %ss_s1 = arith.addf %ss_p0, %ss_p1 : f32
// CHECK-NEXT:   %ss_p2 = kernel.load %ss_smem[2] : memref<8xf32>
// CHECK:        %ss_p7 = kernel.load %ss_smem[7] : memref<8xf32>
// CHECK-NEXT:   %ss = arith.addf %ss_s6, %ss_p7 : f32
// CHECK-NOT:    kernel.barrier
// CHECK-NEXT:   %n = arith.constant 0.00048828125 : f32
// CHECK-NEXT:   %m = arith.mulf %ss, %n : f32
// CHECK-NEXT:   %eps = arith.constant 1.000000e-06 : f32
// CHECK-NEXT:   %s = arith.addf %m, %eps : f32
// CHECK-NEXT:   %r = math.rsqrt %s : f32
// CHECK-NEXT:   kernel.for %a2 = %t to 2048 step 256 {
// CHECK-NEXT:     %v2 = kernel.load %xb[0, %a0, %a2] : memref<1x32x2048xf32>
// CHECK-NEXT:     %w = kernel.load %wb[%a2] : memref<2048xf32>
// CHECK-NEXT:     %h = arith.mulf %v2, %r : f32
// CHECK-NEXT:     %o = arith.mulf %h, %w : f32
// CHECK-NEXT:     kernel.store %o, %yb[0, %a0, %a2] : memref<1x32x2048xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
