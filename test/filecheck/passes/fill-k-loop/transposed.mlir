// RUN: deplo-opt %s -p fill-k-loop | filecheck %s
// RUN: deplo-opt %s -p fill-k-loop,fill-k-loop | filecheck %s
// RUN: deplo-opt %s -p 'fill-k-loop{tma=true}' | filecheck %s
// RUN: deplo-opt %s -p 'fill-k-loop{narrow=true}' --arch sm_75 | filecheck %s
// RUN: deplo-opt %s -p 'fill-k-loop{narrow=true}' | filecheck %s --check-prefix=ASYNC
// RUN: deplo-opt %s -p 'fill-k-loop{narrow=true arch=sm_80}' | filecheck %s --check-prefix=ASYNC
// RUN: deplo-opt %s -p 'fill-k-loop{max_bytes=0}' | filecheck %s --check-prefix=SINGLE
// RUN: deplo-opt %s -p 'fill-k-loop{always=true max_bytes=8192}' | filecheck %s --check-prefix=SINGLE

// linear (1,64,128) x (128,128)^T after the tile pipeline up to pad-smem
// (tileify .. pad-smem): the K-outer loop (8 chunks) refills a padded, transposed slab of
// each operand (4352 + 2304 bytes). The pass keeps two copies of each ("buffers 2") and
// marks the loop to rotate ("pipeline"): transposed slabs are filled by register prefetch
// (cp.async would copy them 4 bytes at a time), and TMA cannot fill a transposed slab, so
// the schedule records fill = prefetch; the memref types (one copy) and the loads are
// unchanged. The second RUN line: idempotent. narrow=true copies them by cp.async anyway
// (fill = async), but not on sm_75, which has no cp.async. max_bytes=0 turns doubling
// off; with max_bytes = 8 KB the doubled slabs (13 KB) do not fit, so they stay single
// even with always (fill = sync, no rotation).

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
      %x1_smem = tile.stage %x1_b[%a1_g_b * 64, %a2_o * 16] box [64, 16] transpose pad 4 : memref<128x128xf32> -> memref<16x68xf32>
      %x_smem = tile.stage %x_b[0, %a0_g_b * 32, %a2_o * 16] box [32, 16] transpose pad 4 : memref<1x64x128xf32> -> memref<16x36xf32>
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
// CHECK:       tile.kernel @k_linear {{.*}}schedule = #tile.schedule<thread = [4, 4], threads = [8, 16], k_chunk = 16, fill = prefetch>}
// CHECK:       loop.for %a2_o = 0 to 8 reduce({{.*}}) -> ({{.*}}) attributes {pipeline} {
// CHECK-NEXT:    %x1_smem = tile.stage %x1_b[%a1_g_b * 64, %a2_o * 16] box [64, 16] transpose pad 4 buffers 2 : memref<128x128xf32> -> memref<16x68xf32>
// CHECK-NEXT:    %x_smem = tile.stage %x_b[0, %a0_g_b * 32, %a2_o * 16] box [32, 16] transpose pad 4 buffers 2 : memref<1x64x128xf32> -> memref<16x36xf32>
// CHECK-NEXT:    = loop.for %a2_i = 0 to 16 reduce({{.*}}) -> ({{.*}}) {
// CHECK:         %in_r0 = loop.load %x_smem[%a2_i, %a0_g_t * 4] : memref<16x36xf32>

// ASYNC:       tile.kernel @k_linear {{.*}}fill = async>}
// ASYNC:       loop.for %a2_o = 0 to 8 reduce({{.*}}) -> ({{.*}}) attributes {pipeline} {
// ASYNC-NEXT:    %x1_smem = tile.stage %x1_b[%a1_g_b * 64, %a2_o * 16] box [64, 16] transpose pad 4 buffers 2 async : memref<128x128xf32> -> memref<16x68xf32>
// ASYNC-NEXT:    %x_smem = tile.stage %x_b[0, %a0_g_b * 32, %a2_o * 16] box [32, 16] transpose pad 4 buffers 2 async : memref<1x64x128xf32> -> memref<16x36xf32>

// SINGLE:      tile.kernel @k_linear {{.*}}fill = sync>}
// SINGLE:      loop.for %a2_o = 0 to 8 reduce({{.*}}) -> ({{.*}}) {
// SINGLE-NEXT:   %x1_smem = tile.stage %x1_b[%a1_g_b * 64, %a2_o * 16] box [64, 16] transpose pad 4 : memref<128x128xf32> -> memref<16x68xf32>
// SINGLE-NEXT:   %x_smem = tile.stage %x_b[0, %a0_g_b * 32, %a2_o * 16] box [32, 16] transpose pad 4 : memref<1x64x128xf32> -> memref<16x36xf32>
