// RUN: deplo-opt %s -p 'fill-k-loop{tma=true}' | filecheck %s
// RUN: deplo-opt %s -p 'fill-k-loop{tma=true},fill-k-loop{tma=true}' | filecheck %s
// RUN: deplo-opt %s -p fill-k-loop | filecheck %s --check-prefix=ASYNC
// RUN: deplo-opt %s -p 'fill-k-loop{tma=true arch=sm_80}' | filecheck %s --check-prefix=ASYNC

// torch.matmul(a.t(), b), a and b (128, 64), after the tile pipeline up to pad-smem: both
// K-chunk slabs are staged in the source's order (a[k, m], b[k, n]). With tma=true, TMA
// fills both copies of each (a box within TMA's rules, 4 KB a copy: fill = tma; the
// second RUN line: idempotent). By default TMA is off (not measured faster yet) and
// cp.async fills them (fill = async); sm_80 has no TMA.

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
      %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] : memref<128x64xf32> -> memref<16x64xf32>
      %x_smem = tile.stage %x_b[%a2_o * 16, 0] : memref<128x64xf32> -> memref<16x64xf32>
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
// CHECK:       tile.kernel @k_matmul {{.*}}fill = tma>}
// CHECK:       loop.for %a2_o = 0 to 8 reduce({{.*}}) -> ({{.*}}) attributes {pipeline} {
// CHECK-NEXT:    %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<16x64xf32>
// CHECK-NEXT:    %x_smem = tile.stage %x_b[%a2_o * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<16x64xf32>

// ASYNC:       tile.kernel @k_matmul {{.*}}fill = async>}
// ASYNC:       loop.for %a2_o = 0 to 8 reduce({{.*}}) -> ({{.*}}) attributes {pipeline} {
// ASYNC-NEXT:    %x1_smem = tile.stage %x1_b[%a2_o * 16, 0] buffers 2 async : memref<128x64xf32> -> memref<16x64xf32>
// ASYNC-NEXT:    %x_smem = tile.stage %x_b[%a2_o * 16, 0] buffers 2 async : memref<128x64xf32> -> memref<16x64xf32>
