// RUN: deplo-opt %s -p fill-k-loop | filecheck %s
// RUN: deplo-opt %s -p 'fill-k-loop{tma=true}' | filecheck %s
// RUN: deplo-opt %s -p fill-k-loop --arch sm_80 | filecheck %s
// RUN: deplo-opt %s -p fill-k-loop --arch sm_75 | filecheck %s --check-prefix=SM75

// torch.matmul(x, w), x (128, 64), w (64, 64), after the tile pipeline up to pad-smem
// (deplodock compile --ir loop, then deplo-opt -p tileify,..,pad-smem): its operands lie
// both ways, so the K chunk slab of w is in the source's order and that of x transposed.
// The pass runs the mixed rotation: two copies of each, w's filled by cp.async, x's by
// register prefetch, the loop rotated, the schedule's fill = mixed (with tma=true too: a
// transposed slab cannot be TMA'd, and TMA is for all of a loop's slabs or none). On
// sm_75 (no cp.async) register prefetch for both was measured slower than one copy: left
// single, fill = sync.

builtin.module {
  func.func @forward(%x: tensor<128x64xf32> {torch.kind = "input"}, %x1: tensor<64x64xf32> {torch.kind = "input"}) -> tensor<128x64xf32> {
    %matmul = tile.kernel @k_matmul axes(%a0_g_b : 4 = block, %a0_g_t : 8 = thread, %a1_g : 16 = thread) ins(%x_b = %x : tensor<128x64xf32>, %x1_b = %x1 : tensor<64x64xf32>) outs(%matmul_b : tensor<128x64xf32>) attributes {covers = ["matmul"], schedule = #tile.schedule<thread = [4, 4], threads = [8, 16], k_chunk = 16>} {
      %a0_g = affine.apply affine_map<(d0, d1) -> (((d0 * 8) + d1))> (%a0_g_b, %a0_g_t)
      %a0_r0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a0_g)
      %a0_r1 = affine.apply affine_map<(d0) -> (((d0 * 4) + 1))> (%a0_g)
      %a0_r2 = affine.apply affine_map<(d0) -> (((d0 * 4) + 2))> (%a0_g)
      %a0_r3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a0_g)
      %a1_c0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a1_g)
      %a1_c1 = affine.apply affine_map<(d0) -> (((d0 * 4) + 1))> (%a1_g)
      %a1_c2 = affine.apply affine_map<(d0) -> (((d0 * 4) + 2))> (%a1_g)
      %a1_c3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a1_g)
      %matmul_r0c0, %matmul_r0c1, %matmul_r0c2, %matmul_r0c3, %matmul_r1c0, %matmul_r1c1, %matmul_r1c2, %matmul_r1c3, %matmul_r2c0, %matmul_r2c1, %matmul_r2c2, %matmul_r2c3, %matmul_r3c0, %matmul_r3c1, %matmul_r3c2, %matmul_r3c3 = loop.for %a2_o = 0 to 4 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
        %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] : memref<64x64xf32> -> memref<16x64xf32>
        %x_smem = tile.stage %x_b[%a0_g_b * 32, %a2_o * 16] box [32, 16] transpose pad 4 : memref<128x64xf32> -> memref<16x36xf32>
        %matmul_r0c0_part, %matmul_r0c1_part, %matmul_r0c2_part, %matmul_r0c3_part, %matmul_r1c0_part, %matmul_r1c1_part, %matmul_r1c2_part, %matmul_r1c3_part, %matmul_r2c0_part, %matmul_r2c1_part, %matmul_r2c2_part, %matmul_r2c3_part, %matmul_r3c0_part, %matmul_r3c1_part, %matmul_r3c2_part, %matmul_r3c3_part = loop.for %a2_i = 0 to 16 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
          %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a2_o, %a2_i)
          %in_r0 = loop.load %x_smem[%a2_i, %a0_g_t * 4] : memref<16x36xf32>
          %in_c0 = loop.load %x1_smem[%a2_i, %a1_g * 4] : memref<16x64xf32>
          %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
          %in_c1 = loop.load %x1_smem[%a2_i, %a1_g * 4 + 1] : memref<16x64xf32>
          %in_r0c1 = arith.mulf %in_r0, %in_c1 : f32
          %in_c2 = loop.load %x1_smem[%a2_i, %a1_g * 4 + 2] : memref<16x64xf32>
          %in_r0c2 = arith.mulf %in_r0, %in_c2 : f32
          %in_c3 = loop.load %x1_smem[%a2_i, %a1_g * 4 + 3] : memref<16x64xf32>
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
        loop.yield %matmul_r0c0_part, %matmul_r0c1_part, %matmul_r0c2_part, %matmul_r0c3_part, %matmul_r1c0_part, %matmul_r1c1_part, %matmul_r1c2_part, %matmul_r1c3_part, %matmul_r2c0_part, %matmul_r2c1_part, %matmul_r2c2_part, %matmul_r2c3_part, %matmul_r3c0_part, %matmul_r3c1_part, %matmul_r3c2_part, %matmul_r3c3_part : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
      }
      loop.store %matmul_r0c0, %matmul_b[%a0_r0, %a1_c0] : memref<128x64xf32>
      loop.store %matmul_r0c1, %matmul_b[%a0_r0, %a1_c1] : memref<128x64xf32>
      loop.store %matmul_r0c2, %matmul_b[%a0_r0, %a1_c2] : memref<128x64xf32>
      loop.store %matmul_r0c3, %matmul_b[%a0_r0, %a1_c3] : memref<128x64xf32>
      loop.store %matmul_r1c0, %matmul_b[%a0_r1, %a1_c0] : memref<128x64xf32>
      loop.store %matmul_r1c1, %matmul_b[%a0_r1, %a1_c1] : memref<128x64xf32>
      loop.store %matmul_r1c2, %matmul_b[%a0_r1, %a1_c2] : memref<128x64xf32>
      loop.store %matmul_r1c3, %matmul_b[%a0_r1, %a1_c3] : memref<128x64xf32>
      loop.store %matmul_r2c0, %matmul_b[%a0_r2, %a1_c0] : memref<128x64xf32>
      loop.store %matmul_r2c1, %matmul_b[%a0_r2, %a1_c1] : memref<128x64xf32>
      loop.store %matmul_r2c2, %matmul_b[%a0_r2, %a1_c2] : memref<128x64xf32>
      loop.store %matmul_r2c3, %matmul_b[%a0_r2, %a1_c3] : memref<128x64xf32>
      loop.store %matmul_r3c0, %matmul_b[%a0_r3, %a1_c0] : memref<128x64xf32>
      loop.store %matmul_r3c1, %matmul_b[%a0_r3, %a1_c1] : memref<128x64xf32>
      loop.store %matmul_r3c2, %matmul_b[%a0_r3, %a1_c2] : memref<128x64xf32>
      loop.store %matmul_r3c3, %matmul_b[%a0_r3, %a1_c3] : memref<128x64xf32>
    }
    func.return %matmul : tensor<128x64xf32>
  }
}


// CHECK:       tile.kernel @k_matmul {{.*}}schedule = #tile.schedule<thread = [4, 4], threads = [8, 16], k_chunk = 16, fill = mixed>}
// CHECK:       loop.for %a2_o = 0 to 4 reduce({{.*}}) -> ({{.*}}) attributes {pipeline} {
// CHECK-NEXT:    %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] buffers 2 async : memref<64x64xf32> -> memref<16x64xf32>
// CHECK-NEXT:    %x_smem = tile.stage %x_b[%a0_g_b * 32, %a2_o * 16] box [32, 16] transpose pad 4 buffers 2 : memref<128x64xf32> -> memref<16x36xf32>

// SM75:        tile.kernel @k_matmul {{.*}}fill = sync>}
// SM75:        loop.for %a2_o = 0 to 4 reduce({{.*}}) -> ({{.*}}) {
// SM75-NEXT:     %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] : memref<64x64xf32> -> memref<16x64xf32>
// SM75-NEXT:     %x_smem = tile.stage %x_b[%a0_g_b * 32, %a2_o * 16] box [32, 16] transpose pad 4 : memref<128x64xf32> -> memref<16x36xf32>
