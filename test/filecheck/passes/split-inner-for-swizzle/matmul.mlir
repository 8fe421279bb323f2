// RUN: deplo-opt %s -p split-inner-for-swizzle | filecheck %s
// RUN: deplo-opt %s -p split-inner-for-swizzle,split-inner-for-swizzle | filecheck %s
// RUN: deplo-opt %s -p 'split-inner-for-swizzle{span=256}' | filecheck %s --check-prefix=WHOLE
// RUN: deplo-opt %s -p 'split-inner-for-swizzle{swizzle=true}' | filecheck %s --check-prefix=SWIZZLE
// RUN: deplo-opt %s -p 'split-inner-for-swizzle{swizzle=true},split-inner-for-swizzle{swizzle=true}' | filecheck %s --check-prefix=SWIZZLE

// torch.matmul(a.t(), b) after tma-copy{enable=true}: both slabs are TMA'd, their rows
// 64 floats (256 bytes), wider than the 128-byte swizzle span. Each is stored as two
// pieces of 32 floats ([16, 64] -> [2, 16, 32]), each a TMA box of its own, and the
// loads index the pieces: [k, n] -> [n floordiv 32, k, n mod 32]. The second RUN line:
// idempotent. With a span of 256 bytes the rows fit: nothing changes. With swizzle=true
// the pieces are also swizzled (SWIZZLE_128B): each load computes its chunk xor its row
// mod 8 (arith.xori), the stored column (idempotent as well).

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
    %matmul_r0c0, %matmul_r0c1, %matmul_r0c2, %matmul_r0c3, %matmul_r1c0, %matmul_r1c1, %matmul_r1c2, %matmul_r1c3, %matmul_r2c0, %matmul_r2c1, %matmul_r2c2, %matmul_r2c3, %matmul_r3c0, %matmul_r3c1, %matmul_r3c2, %matmul_r3c3 = loop.for %a2_o = 0 to 8 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
      %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<16x64xf32>
      %x_smem = tile.stage %x_b[%a2_o * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<16x64xf32>
      %matmul_r0c0_part, %matmul_r0c1_part, %matmul_r0c2_part, %matmul_r0c3_part, %matmul_r1c0_part, %matmul_r1c1_part, %matmul_r1c2_part, %matmul_r1c3_part, %matmul_r2c0_part, %matmul_r2c1_part, %matmul_r2c2_part, %matmul_r2c3_part, %matmul_r3c0_part, %matmul_r3c1_part, %matmul_r3c2_part, %matmul_r3c3_part = loop.for %a2_i = 0 to 16 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
        %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a2_o, %a2_i)
        %in_r0 = loop.load %x_smem[%a2_i, %a0_g * 4] : memref<16x64xf32>
        %in_c0 = loop.load %x1_smem[%a2_i, %a1_g * 4] : memref<16x64xf32>
        %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
        %in_c1 = loop.load %x1_smem[%a2_i, %a1_g * 4 + 1] : memref<16x64xf32>
        %in_r0c1 = arith.mulf %in_r0, %in_c1 : f32
        %in_c2 = loop.load %x1_smem[%a2_i, %a1_g * 4 + 2] : memref<16x64xf32>
        %in_r0c2 = arith.mulf %in_r0, %in_c2 : f32
        %in_c3 = loop.load %x1_smem[%a2_i, %a1_g * 4 + 3] : memref<16x64xf32>
        %in_r0c3 = arith.mulf %in_r0, %in_c3 : f32
        %in_r1 = loop.load %x_smem[%a2_i, %a0_g * 4 + 1] : memref<16x64xf32>
        %in_r1c0 = arith.mulf %in_r1, %in_c0 : f32
        %in_r1c1 = arith.mulf %in_r1, %in_c1 : f32
        %in_r1c2 = arith.mulf %in_r1, %in_c2 : f32
        %in_r1c3 = arith.mulf %in_r1, %in_c3 : f32
        %in_r2 = loop.load %x_smem[%a2_i, %a0_g * 4 + 2] : memref<16x64xf32>
        %in_r2c0 = arith.mulf %in_r2, %in_c0 : f32
        %in_r2c1 = arith.mulf %in_r2, %in_c1 : f32
        %in_r2c2 = arith.mulf %in_r2, %in_c2 : f32
        %in_r2c3 = arith.mulf %in_r2, %in_c3 : f32
        %in_r3 = loop.load %x_smem[%a2_i, %a0_g * 4 + 3] : memref<16x64xf32>
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
// CHECK:       %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] box [16, 64] buffers 2 tma split 32 : memref<128x64xf32> -> memref<2x16x32xf32>
// CHECK-NEXT:  %x_smem = tile.stage %x_b[%a2_o * 16, 0] box [16, 64] buffers 2 tma split 32 : memref<128x64xf32> -> memref<2x16x32xf32>
// CHECK:       %in_r0 = loop.load %x_smem[%a0_g * 4 floordiv 32, %a2_i, %a0_g * 4 mod 32] : memref<2x16x32xf32>
// CHECK-NEXT:  %in_c0 = loop.load %x1_smem[%a1_g * 4 floordiv 32, %a2_i, %a1_g * 4 mod 32] : memref<2x16x32xf32>
// CHECK:       %in_c1 = loop.load %x1_smem[(%a1_g * 4 + 1) floordiv 32, %a2_i, (%a1_g * 4 + 1) mod 32] : memref<2x16x32xf32>

// WHOLE:       %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<16x64xf32>
// WHOLE-NOT:   split

// SWIZZLE:       %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] box [16, 64] buffers 2 tma split 32 swizzle 128 : memref<128x64xf32> -> memref<2x16x32xf32>
// SWIZZLE-NEXT:  %x_smem = tile.stage %x_b[%a2_o * 16, 0] box [16, 64] buffers 2 tma split 32 swizzle 128 : memref<128x64xf32> -> memref<2x16x32xf32>
// SWIZZLE:       %in_c0_chunk = affine.apply affine_map<(d0) -> ((((d0 * 4) mod 32) floordiv 4))> (%a1_g)
// SWIZZLE-NEXT:  %in_c0_line = affine.apply affine_map<(d0) -> ((d0 mod 8))> (%a2_i)
// SWIZZLE-NEXT:  %in_c0_sw = arith.xori %in_c0_chunk, %in_c0_line : index
// SWIZZLE-NEXT:  %in_c0 = loop.load %x1_smem[%a1_g * 4 floordiv 32, %a2_i, %in_c0_sw * 4 + %a1_g * 4 mod 32 mod 4] : memref<2x16x32xf32>
// SWIZZLE-NOT:   _sw_sw
