// RUN: deplo-opt %s -p materialize | filecheck %s

// torch.matmul(a.t(), b), a and b (128, 64), after the whole tile pipeline with
// tma-copy{enable=true}: the K-outer loop (8 chunks of 16) is pipelined, both slabs
// double-buffered, filled by TMA, each stored as two pieces of 32 floats.
// Materialize rotates it with mbarriers (passes/kernel/tma_fills.py): thread 0 initialises
// one barrier per buffer and copies chunk 0 (a box per piece, 8192 bytes expected on
// barrier 0); a barrier makes the inits visible. Each iteration thread 0 copies chunk k+1
// into the other buffer (guarded: not after the last chunk), every thread waits on
// barrier k mod 2 for phase parity (k floordiv 2) mod 2, computes chunk k from buffer
// k mod 2, and the iteration's only barrier frees that buffer for the copy of chunk k+2.
// The slabs are 128-byte aligned.

func.func @forward(%x: tensor<128x64xf32> {torch.kind = "input"}, %x1: tensor<128x64xf32> {torch.kind = "input"}) -> tensor<64x64xf32> {
  %matmul = tile.kernel @k_matmul axes(%a0_g : 16 = thread, %a1_g : 16 = thread) ins(%x_b = %x : tensor<128x64xf32>, %x1_b = %x1 : tensor<128x64xf32>) outs(%matmul_b : tensor<64x64xf32>) attributes {covers = ["matmul", "t"], schedule = #tile.schedule<thread = [4, 4], threads = [16, 16], k_chunk = 16>} {
    %a0_r0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a0_g)
    %a0_r1 = affine.apply affine_map<(d0) -> (((d0 * 4) + 1))> (%a0_g)
    %a0_r2 = affine.apply affine_map<(d0) -> (((d0 * 4) + 2))> (%a0_g)
    %a0_r3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a0_g)
    %a1_c0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a1_g)
    %a1_c1 = affine.apply affine_map<(d0) -> (((d0 * 4) + 1))> (%a1_g)
    %a1_c2 = affine.apply affine_map<(d0) -> (((d0 * 4) + 2))> (%a1_g)
    %a1_c3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a1_g)
    %matmul_r0c0, %matmul_r0c1, %matmul_r0c2, %matmul_r0c3, %matmul_r1c0, %matmul_r1c1, %matmul_r1c2, %matmul_r1c3, %matmul_r2c0, %matmul_r2c1, %matmul_r2c2, %matmul_r2c3, %matmul_r3c0, %matmul_r3c1, %matmul_r3c2, %matmul_r3c3 = loop.for %a2_o = 0 to 8 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) attributes {pipeline} {
      %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] box [16, 64] buffers 2 tma split 32 : memref<128x64xf32> -> memref<2x16x32xf32>
      %x_smem = tile.stage %x_b[%a2_o * 16, 0] box [16, 64] buffers 2 tma split 32 : memref<128x64xf32> -> memref<2x16x32xf32>
      %matmul_r0c0_part, %matmul_r0c1_part, %matmul_r0c2_part, %matmul_r0c3_part, %matmul_r1c0_part, %matmul_r1c1_part, %matmul_r1c2_part, %matmul_r1c3_part, %matmul_r2c0_part, %matmul_r2c1_part, %matmul_r2c2_part, %matmul_r2c3_part, %matmul_r3c0_part, %matmul_r3c1_part, %matmul_r3c2_part, %matmul_r3c3_part = loop.for %a2_i = 0 to 16 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
        %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a2_o, %a2_i)
        %in_r0 = loop.load %x_smem[%a0_g * 4 floordiv 32, %a2_i, %a0_g * 4 mod 32] : memref<2x16x32xf32>
        %in_c0 = loop.load %x1_smem[%a1_g * 4 floordiv 32, %a2_i, %a1_g * 4 mod 32] : memref<2x16x32xf32>
        %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
        %in_c1 = loop.load %x1_smem[(%a1_g * 4 + 1) floordiv 32, %a2_i, (%a1_g * 4 + 1) mod 32] : memref<2x16x32xf32>
        %in_r0c1 = arith.mulf %in_r0, %in_c1 : f32
        %in_c2 = loop.load %x1_smem[(%a1_g * 4 + 2) floordiv 32, %a2_i, (%a1_g * 4 + 2) mod 32] : memref<2x16x32xf32>
        %in_r0c2 = arith.mulf %in_r0, %in_c2 : f32
        %in_c3 = loop.load %x1_smem[(%a1_g * 4 + 3) floordiv 32, %a2_i, (%a1_g * 4 + 3) mod 32] : memref<2x16x32xf32>
        %in_r0c3 = arith.mulf %in_r0, %in_c3 : f32
        %in_r1 = loop.load %x_smem[(%a0_g * 4 + 1) floordiv 32, %a2_i, (%a0_g * 4 + 1) mod 32] : memref<2x16x32xf32>
        %in_r1c0 = arith.mulf %in_r1, %in_c0 : f32
        %in_r1c1 = arith.mulf %in_r1, %in_c1 : f32
        %in_r1c2 = arith.mulf %in_r1, %in_c2 : f32
        %in_r1c3 = arith.mulf %in_r1, %in_c3 : f32
        %in_r2 = loop.load %x_smem[(%a0_g * 4 + 2) floordiv 32, %a2_i, (%a0_g * 4 + 2) mod 32] : memref<2x16x32xf32>
        %in_r2c0 = arith.mulf %in_r2, %in_c0 : f32
        %in_r2c1 = arith.mulf %in_r2, %in_c1 : f32
        %in_r2c2 = arith.mulf %in_r2, %in_c2 : f32
        %in_r2c3 = arith.mulf %in_r2, %in_c3 : f32
        %in_r3 = loop.load %x_smem[(%a0_g * 4 + 3) floordiv 32, %a2_i, (%a0_g * 4 + 3) mod 32] : memref<2x16x32xf32>
        %in_r3c0 = arith.mulf %in_r3, %in_c0 : f32
        %in_r3c1 = arith.mulf %in_r3, %in_c1 : f32
        %in_r3c2 = arith.mulf %in_r3, %in_c2 : f32
        %in_r3c3 = arith.mulf %in_r3, %in_c3 : f32
        loop.yield %in_r0c0, %in_r0c1, %in_r0c2, %in_r0c3, %in_r1c0, %in_r1c1, %in_r1c2, %in_r1c3, %in_r2c0, %in_r2c1, %in_r2c2, %in_r2c3, %in_r3c0, %in_r3c1, %in_r3c2, %in_r3c3 : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
      }
      loop.yield %matmul_r0c0_part, %matmul_r0c1_part, %matmul_r0c2_part, %matmul_r0c3_part, %matmul_r1c0_part, %matmul_r1c1_part, %matmul_r1c2_part, %matmul_r1c3_part, %matmul_r2c0_part, %matmul_r2c1_part, %matmul_r2c2_part, %matmul_r2c3_part, %matmul_r3c0_part, %matmul_r3c1_part, %matmul_r3c2_part, %matmul_r3c3_part : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
    }
    loop.store %matmul_r0c0, %matmul_b[%a0_r0, %a1_c0] : memref<64x64xf32>
    loop.store %matmul_r0c1, %matmul_b[%a0_r0, %a1_c1] : memref<64x64xf32>
    loop.store %matmul_r0c2, %matmul_b[%a0_r0, %a1_c2] : memref<64x64xf32>
    loop.store %matmul_r0c3, %matmul_b[%a0_r0, %a1_c3] : memref<64x64xf32>
    loop.store %matmul_r1c0, %matmul_b[%a0_r1, %a1_c0] : memref<64x64xf32>
    loop.store %matmul_r1c1, %matmul_b[%a0_r1, %a1_c1] : memref<64x64xf32>
    loop.store %matmul_r1c2, %matmul_b[%a0_r1, %a1_c2] : memref<64x64xf32>
    loop.store %matmul_r1c3, %matmul_b[%a0_r1, %a1_c3] : memref<64x64xf32>
    loop.store %matmul_r2c0, %matmul_b[%a0_r2, %a1_c0] : memref<64x64xf32>
    loop.store %matmul_r2c1, %matmul_b[%a0_r2, %a1_c1] : memref<64x64xf32>
    loop.store %matmul_r2c2, %matmul_b[%a0_r2, %a1_c2] : memref<64x64xf32>
    loop.store %matmul_r2c3, %matmul_b[%a0_r2, %a1_c3] : memref<64x64xf32>
    loop.store %matmul_r3c0, %matmul_b[%a0_r3, %a1_c0] : memref<64x64xf32>
    loop.store %matmul_r3c1, %matmul_b[%a0_r3, %a1_c1] : memref<64x64xf32>
    loop.store %matmul_r3c2, %matmul_b[%a0_r3, %a1_c2] : memref<64x64xf32>
    loop.store %matmul_r3c3, %matmul_b[%a0_r3, %a1_c3] : memref<64x64xf32>
  }
  func.return %matmul : tensor<64x64xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       kernel.kernel @k_matmul grid(1, 1, 1) block(256, 1, 1)
// CHECK:       %x1_smem = kernel.shared "x1_smem" align 128 : memref<2x2x16x32xf32>
// CHECK-NEXT:  %x_smem = kernel.shared "x_smem" align 128 : memref<2x2x16x32xf32>
// CHECK-NEXT:  %a2_o_bar = kernel.mbarrier "a2_o_bar" : memref<2xi64>
// CHECK-NEXT:  %c0 = arith.constant 0 : index
// CHECK-NEXT:  %lead = arith.cmpi eq, %tid, %c0 : index
// CHECK-NEXT:  scf.if %lead {
// CHECK-NEXT:    kernel.mbarrier_init %a2_o_bar[0], 1 : memref<2xi64>
// CHECK-NEXT:    kernel.mbarrier_init %a2_o_bar[1], 1 : memref<2xi64>
// CHECK-NEXT:    kernel.mbarrier_arrive_expect_tx %a2_o_bar[%c0], 8192 : memref<2xi64>
// CHECK-NEXT:    kernel.tma_load %x1_b[%c0 * 16, 0] -> %x1_smem[%c0, 0, 0, 0] box [16, 32] barrier %a2_o_bar[%c0] : memref<128x64xf32> -> memref<2x2x16x32xf32>, memref<2xi64>
// CHECK-NEXT:    kernel.tma_load %x1_b[%c0 * 16, 32] -> %x1_smem[%c0, 1, 0, 0] box [16, 32] barrier %a2_o_bar[%c0] : memref<128x64xf32> -> memref<2x2x16x32xf32>, memref<2xi64>
// CHECK-NEXT:    kernel.tma_load %x_b[%c0 * 16, 0] -> %x_smem[%c0, 0, 0, 0] box [16, 32] barrier %a2_o_bar[%c0] : memref<128x64xf32> -> memref<2x2x16x32xf32>, memref<2xi64>
// CHECK-NEXT:    kernel.tma_load %x_b[%c0 * 16, 32] -> %x_smem[%c0, 1, 0, 0] box [16, 32] barrier %a2_o_bar[%c0] : memref<128x64xf32> -> memref<2x2x16x32xf32>, memref<2xi64>
// CHECK-NEXT:  }
// CHECK-NEXT:  kernel.barrier
// CHECK:       = kernel.for %a2_o = %c0_1 to 8 step 1 reduce(
// CHECK-NEXT:    %buf = affine.apply affine_map<(d0) -> ((d0 mod 2))> (%a2_o)
// CHECK-NEXT:    %following = affine.apply affine_map<(d0) -> ((d0 + 1))> (%a2_o)
// CHECK-NEXT:    %a2_o_next = affine.apply affine_map<(d0) -> (((d0 + 1) mod 8))> (%a2_o)
// CHECK-NEXT:    %buf_next = affine.apply affine_map<(d0) -> (((d0 + 1) mod 2))> (%a2_o)
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %more = arith.cmpi ult, %following, %c8 : index
// CHECK-NEXT:    scf.if %more {
// CHECK-NEXT:      scf.if %lead {
// CHECK-NEXT:        kernel.mbarrier_arrive_expect_tx %a2_o_bar[%buf_next], 8192 : memref<2xi64>
// CHECK-NEXT:        kernel.tma_load %x1_b[%a2_o_next * 16, 0] -> %x1_smem[%buf_next, 0, 0, 0] box [16, 32] barrier %a2_o_bar[%buf_next]
// CHECK-NEXT:        kernel.tma_load %x1_b[%a2_o_next * 16, 32] -> %x1_smem[%buf_next, 1, 0, 0] box [16, 32] barrier %a2_o_bar[%buf_next]
// CHECK-NEXT:        kernel.tma_load %x_b[%a2_o_next * 16, 0] -> %x_smem[%buf_next, 0, 0, 0] box [16, 32] barrier %a2_o_bar[%buf_next]
// CHECK-NEXT:        kernel.tma_load %x_b[%a2_o_next * 16, 32] -> %x_smem[%buf_next, 1, 0, 0] box [16, 32] barrier %a2_o_bar[%buf_next]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    %parity = affine.apply affine_map<(d0) -> (((d0 floordiv 2) mod 2))> (%a2_o)
// CHECK-NEXT:    kernel.mbarrier_wait %a2_o_bar[%buf], %parity : memref<2xi64>
// CHECK:           %in_r0 = kernel.load %x_smem[%buf, %a0_g * 4 floordiv 32, %a2_i, %a0_g * 4 mod 32] : memref<2x2x16x32xf32>
// CHECK-NEXT:      %in_c0 = kernel.load %x1_smem[%buf, %a1_g * 4 floordiv 32, %a2_i, %a1_g * 4 mod 32] : memref<2x2x16x32xf32>
// CHECK:         kernel.barrier
// CHECK-NEXT:    kernel.yield
// CHECK-NOT:   kernel.barrier
// CHECK:       func.return
