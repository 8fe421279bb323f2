// RUN: deplo-opt %s -p stage-inputs | filecheck %s
// RUN: deplo-opt %s -p stage-inputs,stage-inputs | filecheck %s
// RUN: deplo-opt %s -p 'stage-inputs{max_bytes=4096}' | filecheck %s --check-prefix=BUDGET
// RUN: deplo-opt %s -p 'stage-inputs{max_bytes=1024}' | filecheck %s --check-prefix=NONE

// linear (1,64,128) x (128,128)^T after the tile pipeline up to permute-register-tile
// (tileify .. blockify-launch): blocks of 32 x 64 outputs (8 x 16 threads of 4 x 4), K
// chunked by BK = 16. Each K-outer iteration stages one chunk of each operand at the top
// of its body, transposed ([k][m] and [k][n]: box [rows, 16] stored as [16, rows]), and
// the inner loop reads the slabs at (%a2_i, the thread's row/column in the block). The
// chunk rule applies whatever the input's size (no min_source_bytes). The second RUN:
// idempotent. The third: within max_bytes = 4 KB the x slab (2 KB) is staged and the weight's
// (4 KB more) is declined, its loads stay global. The fourth: neither fits 1 KB.

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
    %linear_r0c0, %linear_r0c1, %linear_r0c2, %linear_r0c3, %linear_r1c0, %linear_r1c1, %linear_r1c2, %linear_r1c3, %linear_r2c0, %linear_r2c1, %linear_r2c2, %linear_r2c3, %linear_r3c0, %linear_r3c1, %linear_r3c2, %linear_r3c3 = loop.for %a2_o = 0 to 8 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
      %linear_r0c0_part, %linear_r0c1_part, %linear_r0c2_part, %linear_r0c3_part, %linear_r1c0_part, %linear_r1c1_part, %linear_r1c2_part, %linear_r1c3_part, %linear_r2c0_part, %linear_r2c1_part, %linear_r2c2_part, %linear_r2c3_part, %linear_r3c0_part, %linear_r3c1_part, %linear_r3c2_part, %linear_r3c3_part = loop.for %a2_i = 0 to 16 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
        %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a2_o, %a2_i)
        %in_r0 = loop.load %x_b[0, %a0_r0, %a2] : memref<1x64x128xf32>
        %in_c0 = loop.load %x1_b[%a1_c0, %a2] : memref<128x128xf32>
        %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
        %in_c1 = loop.load %x1_b[%a1_c1, %a2] : memref<128x128xf32>
        %in_r0c1 = arith.mulf %in_r0, %in_c1 : f32
        %in_c2 = loop.load %x1_b[%a1_c2, %a2] : memref<128x128xf32>
        %in_r0c2 = arith.mulf %in_r0, %in_c2 : f32
        %in_c3 = loop.load %x1_b[%a1_c3, %a2] : memref<128x128xf32>
        %in_r0c3 = arith.mulf %in_r0, %in_c3 : f32
        %in_r1 = loop.load %x_b[0, %a0_r1, %a2] : memref<1x64x128xf32>
        %in_r1c0 = arith.mulf %in_r1, %in_c0 : f32
        %in_r1c1 = arith.mulf %in_r1, %in_c1 : f32
        %in_r1c2 = arith.mulf %in_r1, %in_c2 : f32
        %in_r1c3 = arith.mulf %in_r1, %in_c3 : f32
        %in_r2 = loop.load %x_b[0, %a0_r2, %a2] : memref<1x64x128xf32>
        %in_r2c0 = arith.mulf %in_r2, %in_c0 : f32
        %in_r2c1 = arith.mulf %in_r2, %in_c1 : f32
        %in_r2c2 = arith.mulf %in_r2, %in_c2 : f32
        %in_r2c3 = arith.mulf %in_r2, %in_c3 : f32
        %in_r3 = loop.load %x_b[0, %a0_r3, %a2] : memref<1x64x128xf32>
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
// CHECK:       loop.for %a2_o = 0 to 8 reduce
// CHECK-NEXT:    %x1_smem = tile.stage %x1_b[%a1_g_b * 64, %a2_o * 16] box [64, 16] transpose : memref<128x128xf32> -> memref<16x64xf32>
// CHECK-NEXT:    %x_smem = tile.stage %x_b[0, %a0_g_b * 32, %a2_o * 16] box [32, 16] transpose : memref<1x64x128xf32> -> memref<16x32xf32>
// CHECK-NEXT:    loop.for %a2_i = 0 to 16 reduce
// CHECK-NEXT:      %a2 = affine.apply
// CHECK-NEXT:      %in_r0 = loop.load %x_smem[%a2_i, %a0_g_t * 4] : memref<16x32xf32>
// CHECK-NEXT:      %in_c0 = loop.load %x1_smem[%a2_i, %a1_g_t * 4] : memref<16x64xf32>
// CHECK:           %in_c3 = loop.load %x1_smem[%a2_i, %a1_g_t * 4 + 3] : memref<16x64xf32>
// CHECK:           %in_r3 = loop.load %x_smem[%a2_i, %a0_g_t * 4 + 3] : memref<16x32xf32>
// CHECK-NOT:       loop.load %x
// CHECK-NOT:       tile.stage
// CHECK:       loop.store %linear_r0c0, %linear_b[0, %a0_r0, %a1_c0]

// BUDGET-NOT:  tile.stage %x1_b
// BUDGET:      %x_smem = tile.stage %x_b[0, %a0_g_b * 32, %a2_o * 16] box [32, 16] transpose
// BUDGET-NOT:  tile.stage %x1_b
// BUDGET:      %in_r0 = loop.load %x_smem[%a2_i, %a0_g_t * 4] : memref<16x32xf32>
// BUDGET-NEXT: %in_c0 = loop.load %x1_b[%a1_c0, %a2] : memref<128x128xf32>

// NONE-NOT:    tile.stage
// NONE:        %in_r0 = loop.load %x_b[0, %a0_r0, %a2] : memref<1x64x128xf32>
// NONE-NEXT:   %in_c0 = loop.load %x1_b[%a1_c0, %a2] : memref<128x128xf32>
// NONE-NOT:    tile.stage
