// RUN: deplo-opt %s -p materialize | filecheck %s

// linear (1,64,128) x (128,128)^T after the whole tile pipeline (PASSES_TO["tile"], with
// async-copy{narrow=true}: by default transposed slabs get register prefetch, see
// prefetch.mlir): the K-outer loop (8 chunks of 16) is pipelined, both slabs
// double-buffered and async.
// Materialize rotates it: the prologue copies chunk 0 into buffer 0 with cp.async and
// commits; each iteration copies chunk k+1 into the other buffer (guarded: not after the
// last chunk), commits, waits until one group is left in flight (chunk k has landed),
// and a barrier makes it visible to every thread; it computes chunk k from buffer
// k mod 2, and a second barrier frees that buffer for the copy of chunk k+2. The slabs
// are transposed, so their copies go 4 bytes each (no vector fill), consecutive threads
// on consecutive elements.

func.func @forward(%x: tensor<1x64x128xf32>, %x1: tensor<128x128xf32>) -> tensor<1x64x128xf32> {
  %linear = tile.kernel @k_linear axes(%a0_g_b : 2 = block, %a0_g_t : 8 = thread, %a1_g_b : 2 = block, %a1_g_t : 16 = thread) ins(%x_b = %x : tensor<1x64x128xf32>, %x1_b = %x1 : tensor<128x128xf32>) outs(%linear_b : tensor<1x64x128xf32>) attributes {covers = ["linear"], schedule = #tile.schedule<thread = [4, 4], threads = [8, 16], k_chunk = 16>} {
    %a0_g = affine.apply affine_map<(d0, d1) -> (((d0 * 8) + d1))> (%a0_g_b, %a0_g_t)
    %a1_g = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a1_g_b, %a1_g_t)
    %a0_r0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a0_g)
    %a0_r1 = affine.apply affine_map<(d0) -> (((d0 * 4) + 1))> (%a0_g)
    %a0_r2 = affine.apply affine_map<(d0) -> (((d0 * 4) + 2))> (%a0_g)
    %a0_r3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a0_g)
    %a1_c0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a1_g)
    %a1_c1 = affine.apply affine_map<(d0) -> (((d0 * 4) + 1))> (%a1_g)
    %a1_c2 = affine.apply affine_map<(d0) -> (((d0 * 4) + 2))> (%a1_g)
    %a1_c3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a1_g)
    %linear_r0c0, %linear_r0c1, %linear_r0c2, %linear_r0c3, %linear_r1c0, %linear_r1c1, %linear_r1c2, %linear_r1c3, %linear_r2c0, %linear_r2c1, %linear_r2c2, %linear_r2c3, %linear_r3c0, %linear_r3c1, %linear_r3c2, %linear_r3c3 = loop.for %a2_o = 0 to 8 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) attributes {pipeline} {
      %x1_smem = tile.stage %x1_b[%a1_g_b * 64, %a2_o * 16] box [64, 16] transpose pad 4 buffers 2 async : memref<128x128xf32> -> memref<16x68xf32>
      %x_smem = tile.stage %x_b[0, %a0_g_b * 32, %a2_o * 16] box [32, 16] transpose pad 4 buffers 2 async : memref<1x64x128xf32> -> memref<16x36xf32>
      %linear_r0c0_part, %linear_r0c1_part, %linear_r0c2_part, %linear_r0c3_part, %linear_r1c0_part, %linear_r1c1_part, %linear_r1c2_part, %linear_r1c3_part, %linear_r2c0_part, %linear_r2c1_part, %linear_r2c2_part, %linear_r2c3_part, %linear_r3c0_part, %linear_r3c1_part, %linear_r3c2_part, %linear_r3c3_part = loop.for %a2_i = 0 to 16 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
        %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a2_o, %a2_i)
        %in_r0 = loop.load %x_smem[%a2_i, %a0_g_t * 4] : memref<16x36xf32>
        %in_c0 = loop.load %x1_smem[%a2_i, %a1_g_t * 4] : memref<16x68xf32>
        %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
        %in_c1 = loop.load %x1_smem[%a2_i, %a1_g_t * 4 + 1] : memref<16x68xf32>
        %in_r0c1 = arith.mulf %in_r0, %in_c1 : f32
        %in_c2 = loop.load %x1_smem[%a2_i, %a1_g_t * 4 + 2] : memref<16x68xf32>
        %in_r0c2 = arith.mulf %in_r0, %in_c2 : f32
        %in_c3 = loop.load %x1_smem[%a2_i, %a1_g_t * 4 + 3] : memref<16x68xf32>
        %in_r0c3 = arith.mulf %in_r0, %in_c3 : f32
        %in_r1 = loop.load %x_smem[%a2_i, %a0_g_t * 4 + 1] : memref<16x36xf32>
        %in_r1c0 = arith.mulf %in_r1, %in_c0 : f32
        %in_r1c1 = arith.mulf %in_r1, %in_c1 : f32
        %in_r1c2 = arith.mulf %in_r1, %in_c2 : f32
        %in_r1c3 = arith.mulf %in_r1, %in_c3 : f32
        %in_r2 = loop.load %x_smem[%a2_i, %a0_g_t * 4 + 2] : memref<16x36xf32>
        %in_r2c0 = arith.mulf %in_r2, %in_c0 : f32
        %in_r2c1 = arith.mulf %in_r2, %in_c1 : f32
        %in_r2c2 = arith.mulf %in_r2, %in_c2 : f32
        %in_r2c3 = arith.mulf %in_r2, %in_c3 : f32
        %in_r3 = loop.load %x_smem[%a2_i, %a0_g_t * 4 + 3] : memref<16x36xf32>
        %in_r3c0 = arith.mulf %in_r3, %in_c0 : f32
        %in_r3c1 = arith.mulf %in_r3, %in_c1 : f32
        %in_r3c2 = arith.mulf %in_r3, %in_c2 : f32
        %in_r3c3 = arith.mulf %in_r3, %in_c3 : f32
        loop.yield %in_r0c0, %in_r0c1, %in_r0c2, %in_r0c3, %in_r1c0, %in_r1c1, %in_r1c2, %in_r1c3, %in_r2c0, %in_r2c1, %in_r2c2, %in_r2c3, %in_r3c0, %in_r3c1, %in_r3c2, %in_r3c3 : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
      }
      loop.yield %linear_r0c0_part, %linear_r0c1_part, %linear_r0c2_part, %linear_r0c3_part, %linear_r1c0_part, %linear_r1c1_part, %linear_r1c2_part, %linear_r1c3_part, %linear_r2c0_part, %linear_r2c1_part, %linear_r2c2_part, %linear_r2c3_part, %linear_r3c0_part, %linear_r3c1_part, %linear_r3c2_part, %linear_r3c3_part : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
    }
    loop.store %linear_r0c0, %linear_b[0, %a0_r0, %a1_c0] : memref<1x64x128xf32>
    loop.store %linear_r0c1, %linear_b[0, %a0_r0, %a1_c1] : memref<1x64x128xf32>
    loop.store %linear_r0c2, %linear_b[0, %a0_r0, %a1_c2] : memref<1x64x128xf32>
    loop.store %linear_r0c3, %linear_b[0, %a0_r0, %a1_c3] : memref<1x64x128xf32>
    loop.store %linear_r1c0, %linear_b[0, %a0_r1, %a1_c0] : memref<1x64x128xf32>
    loop.store %linear_r1c1, %linear_b[0, %a0_r1, %a1_c1] : memref<1x64x128xf32>
    loop.store %linear_r1c2, %linear_b[0, %a0_r1, %a1_c2] : memref<1x64x128xf32>
    loop.store %linear_r1c3, %linear_b[0, %a0_r1, %a1_c3] : memref<1x64x128xf32>
    loop.store %linear_r2c0, %linear_b[0, %a0_r2, %a1_c0] : memref<1x64x128xf32>
    loop.store %linear_r2c1, %linear_b[0, %a0_r2, %a1_c1] : memref<1x64x128xf32>
    loop.store %linear_r2c2, %linear_b[0, %a0_r2, %a1_c2] : memref<1x64x128xf32>
    loop.store %linear_r2c3, %linear_b[0, %a0_r2, %a1_c3] : memref<1x64x128xf32>
    loop.store %linear_r3c0, %linear_b[0, %a0_r3, %a1_c0] : memref<1x64x128xf32>
    loop.store %linear_r3c1, %linear_b[0, %a0_r3, %a1_c1] : memref<1x64x128xf32>
    loop.store %linear_r3c2, %linear_b[0, %a0_r3, %a1_c2] : memref<1x64x128xf32>
    loop.store %linear_r3c3, %linear_b[0, %a0_r3, %a1_c3] : memref<1x64x128xf32>
  }
  func.return %linear : tensor<1x64x128xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       kernel.kernel @k_linear grid(4, 1, 1) block(128, 1, 1)
// Two copies of each slab.
// CHECK:       %x1_smem = kernel.shared "x1_smem" : memref<2x16x68xf32>
// CHECK-NEXT:  %x_smem = kernel.shared "x_smem" : memref<2x16x36xf32>
// The prologue: chunk 0 into buffer 0, one committed group.
// CHECK-NEXT:  %c0 = arith.constant 0 : index
// CHECK-NEXT:  kernel.for %x1_smem_flat = %tid to 1024 step 128 {
// CHECK-NEXT:    kernel.cp_async %x1_b[%a1_g_b * 64 + %x1_smem_flat floordiv 16, %c0 * 16 + %x1_smem_flat mod 16] -> %x1_smem[%c0, %x1_smem_flat mod 16, %x1_smem_flat floordiv 16] : memref<128x128xf32> -> memref<2x16x68xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  kernel.for %x_smem_flat = %tid to 512 step 128 {
// CHECK-NEXT:    kernel.cp_async %x_b[0, %a0_g_b * 32 + %x_smem_flat floordiv 16, %c0 * 16 + %x_smem_flat mod 16] -> %x_smem[%c0, %x_smem_flat mod 16, %x_smem_flat floordiv 16] : memref<1x64x128xf32> -> memref<2x16x36xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  kernel.cp_async_commit
// The steady state.
// CHECK:       = kernel.for %a2_o = %c0_1 to 8 step 1 reduce(
// CHECK-NEXT:    %buf = affine.apply affine_map<(d0) -> ((d0 mod 2))> (%a2_o)
// CHECK-NEXT:    %following = affine.apply affine_map<(d0) -> ((d0 + 1))> (%a2_o)
// CHECK-NEXT:    %a2_o_next = affine.apply affine_map<(d0) -> (((d0 + 1) mod 8))> (%a2_o)
// CHECK-NEXT:    %buf_next = affine.apply affine_map<(d0) -> (((d0 + 1) mod 2))> (%a2_o)
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %more = arith.cmpi ult, %following, %c8 : index
// CHECK-NEXT:    scf.if %more {
// CHECK-NEXT:      kernel.for %[[F1:.*]] = %tid to 1024 step 128 {
// CHECK-NEXT:        kernel.cp_async %x1_b[%a1_g_b * 64 + %[[F1]] floordiv 16, %a2_o_next * 16 + %[[F1]] mod 16] -> %x1_smem[%buf_next, %[[F1]] mod 16, %[[F1]] floordiv 16]
// CHECK-NEXT:      }
// CHECK-NEXT:      kernel.for %[[F2:.*]] = %tid to 512 step 128 {
// CHECK-NEXT:        kernel.cp_async %x_b[0, %a0_g_b * 32 + %[[F2]] floordiv 16, %a2_o_next * 16 + %[[F2]] mod 16] -> %x_smem[%buf_next, %[[F2]] mod 16, %[[F2]] floordiv 16]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.cp_async_commit
// CHECK-NEXT:    kernel.cp_async_wait 1
// CHECK-NEXT:    kernel.barrier
// CHECK-NOT:     kernel.cp_async
// The compute reads buffer k mod 2.
// CHECK:         = kernel.for %a2_i = %c0_2 to 16 step 1 reduce(
// CHECK:           %in_r0 = kernel.load %x_smem[%buf, %a2_i, %a0_g_t * 4] : memref<2x16x36xf32>
// CHECK-NEXT:      %in_c0 = kernel.load %x1_smem[%buf, %a2_i, %a1_g_t * 4] : memref<2x16x68xf32>
// CHECK:           kernel.yield %in_r0c0,
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.barrier
// CHECK-NEXT:    kernel.yield %linear_r0c0_part,
// CHECK-NEXT:  }
// CHECK-NOT:   kernel.cp_async
// CHECK:       kernel.store %linear_r0c0, %linear_b[0, %a0_r0, %a1_c0]
