// RUN: deplo-opt %s -p split-matmul-k | filecheck %s
// RUN: deplo-opt %s -p split-matmul-k,split-matmul-k | filecheck %s
// RUN: deplo-opt %s -p 'split-matmul-k{splits=2}' | filecheck %s --check-prefix=TWO
// RUN: deplo-opt %s -p 'split-matmul-k{splits=1}' | filecheck %s --check-prefix=NONE
// RUN: deplo-opt %s -p 'split-matmul-k{splits=3}' | filecheck %s --check-prefix=THREE

// linear (1,32,512) x (256,512)^T as tileify leaves it: a 32 x 256 output is too few
// tiles for the GPU, so the cost model splits K = 512 four ways. The partials kernel has
// the split axis %c first, runs 128 of K and carries the plan (a planned #tile.schedule); the
// original kernel adds the four partials in order. The second RUN line: idempotent (the
// partials kernel carries a schedule, the combine's reduce is no contraction). splits=2
// overrides the count; splits=1 turns the pass off. A count whose chunks do not divide
// K (3) pads K to 3 x 176 (11 chunks of 16 a split: edge tiles), the loads past K
// guarded (they read 0 there; only K may leave its extent, so only it is tested).

func.func @forward(%x: tensor<1x32x512xf32>, %x1: tensor<256x512xf32>) -> tensor<1x32x256xf32> {
  %linear = tile.kernel @k_linear axes(%a0 : 32 = free, %a1 : 256 = free) ins(%x_b = %x : tensor<1x32x512xf32>, %x1_b = %x1 : tensor<256x512xf32>) outs(%linear_b : tensor<1x32x256xf32>) attributes {covers = ["linear"]} {
    %linear_1 = loop.for %a2 = 0 to 512 reduce(add) -> f32 {
      %in = loop.load %x_b[0, %a0, %a2] : memref<1x32x512xf32>
      %in_1 = loop.load %x1_b[%a1, %a2] : memref<256x512xf32>
      %in_2 = arith.mulf %in, %in_1 : f32
      loop.yield %in_2 : f32
    }
    loop.store %linear_1, %linear_b[0, %a0, %a1] : memref<1x32x256xf32>
  }
  func.return %linear : tensor<1x32x256xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       %linear_parts = tile.kernel @k_linear_chunks axes(%c : 4 = free, %a0 : 32 = free, %a1 : 256 = free)
// CHECK-SAME:  outs(%part_b : tensor<4x32x256xf32>)
// CHECK-SAME:  schedule = #tile.schedule<planned, thread = [4, 4], threads = [8, 16], k_chunk = 16, splits = 4>
// CHECK-NEXT:    %linear = loop.for %a2_in = 0 to 128 reduce(add) -> f32 {
// CHECK-NEXT:      %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 128) + d1))> (%c, %a2_in)
// CHECK-NEXT:      %in = loop.load %x_b[0, %a0, %a2] : memref<1x32x512xf32>
// CHECK-NEXT:      %in_1 = loop.load %x1_b[%a1, %a2] : memref<256x512xf32>
// CHECK-NEXT:      %in_2 = arith.mulf %in, %in_1 : f32
// CHECK-NEXT:      loop.yield %in_2 : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.store %linear, %part_b[%c, %a0, %a1] : memref<4x32x256xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %linear = tile.kernel @k_linear axes(%a0 : 32 = free, %a1 : 256 = free)
// CHECK-SAME:  %part_b = %linear_parts : tensor<4x32x256xf32>
// CHECK-SAME:  outs(%linear_b : tensor<1x32x256xf32>)
// CHECK-NOT:   schedule
// CHECK-NEXT:    %linear_1 = loop.for %c_part = 0 to 4 reduce(add) -> f32 {
// CHECK-NEXT:      %linear_part = loop.load %part_b[%c_part, %a0, %a1] : memref<4x32x256xf32>
// CHECK-NEXT:      loop.yield %linear_part : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.store %linear_1, %linear_b[0, %a0, %a1] : memref<1x32x256xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %linear : tensor<1x32x256xf32>
// CHECK-NOT:   tile.kernel

// TWO:         tile.kernel @k_linear_chunks axes(%c : 2 = free, %a0 : 32 = free, %a1 : 256 = free)
// TWO-SAME:    outs(%part_b : tensor<2x32x256xf32>)
// TWO-NEXT:      loop.for %a2_in = 0 to 256 reduce(add) -> f32 {
// TWO-NEXT:        affine.apply affine_map<(d0, d1) -> (((d0 * 256) + d1))> (%c, %a2_in)
// TWO:           tile.kernel @k_linear axes(%a0 : 32 = free, %a1 : 256 = free)
// TWO-NEXT:      loop.for %c_part = 0 to 2 reduce(add) -> f32 {

// NONE-NOT:    k_linear_chunks
// NONE:        tile.kernel @k_linear axes(%a0 : 32 = free, %a1 : 256 = free)
// NONE-NEXT:     loop.for %a2 = 0 to 512 reduce(add) -> f32 {
// NONE-NOT:    k_linear_chunks

// THREE:       tile.kernel @k_linear_chunks axes(%c : 3 = free, %a0 : 32 = free, %a1 : 256 = free)
// THREE-SAME:  splits = 3
// THREE-NEXT:    loop.for %a2_in = 0 to 176 reduce(add) -> f32 {
// THREE-NEXT:      %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 176) + d1))> (%c, %a2_in)
// THREE-NEXT:      loop.load %x_b[0, %a0, %a2] guarded : memref<1x32x512xf32>
// THREE-NEXT:      loop.load %x1_b[%a1, %a2] guarded : memref<256x512xf32>
// THREE:         loop.store %linear, %part_b[%c, %a0, %a1] : memref<3x32x256xf32>
// THREE:       loop.for %c_part = 0 to 3 reduce(add) -> f32 {
