// RUN: deplo-opt %s -p chunk-matmul-k | filecheck %s
// RUN: deplo-opt %s -p 'chunk-matmul-k{bk=16}' | filecheck %s
// RUN: deplo-opt %s -p chunk-matmul-k,chunk-matmul-k | filecheck %s

// A batch of 16 x 16 x 16 products after register-tile: the planner's 16 x 16 block tile
// (2 x 2 in 8 x 8 threads) whose K chunk is the whole K (whole_k, ``tile_for``). A chunk
// as long as the loop is one chunk when the kernel has a block tile: an outer loop of one
// trip, so stage-inputs stages both operands' whole K once. (Without a block tile such a
// chunk leaves the loop whole: linear.mlir's LEFT.) Idempotent: the chunked loop's body
// is a loop.

func.func @forward(%x: tensor<2x16x16xf32>, %x1: tensor<2x16x16xf32>) -> tensor<2x16x16xf32> {
  %bmm = tile.kernel @k_bmm axes(%a0 : 2 = free, %a1_g : 8 = free, %a2_g : 8 = free) ins(%x_b = %x : tensor<2x16x16xf32>, %x1_b = %x1 : tensor<2x16x16xf32>) outs(%bmm_b : tensor<2x16x16xf32>) attributes {schedule = #tile.schedule<thread = [2, 2], threads = [8, 8], k_chunk = 16>} {
    %a1_r0 = affine.apply affine_map<(d0) -> ((d0 * 2))> (%a1_g)
    %a1_r1 = affine.apply affine_map<(d0) -> (((d0 * 2) + 1))> (%a1_g)
    %a2_c0 = affine.apply affine_map<(d0) -> ((d0 * 2))> (%a2_g)
    %a2_c1 = affine.apply affine_map<(d0) -> (((d0 * 2) + 1))> (%a2_g)
    %acc_r0c0, %acc_r0c1, %acc_r1c0, %acc_r1c1 = loop.for %a3 = 0 to 16 reduce(add, add, add, add) -> (f32, f32, f32, f32) {
      %in_r0 = loop.load %x_b[%a0, %a1_r0, %a3] : memref<2x16x16xf32>
      %in_c0 = loop.load %x1_b[%a0, %a3, %a2_c0] : memref<2x16x16xf32>
      %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
      %in_c1 = loop.load %x1_b[%a0, %a3, %a2_c1] : memref<2x16x16xf32>
      %in_r0c1 = arith.mulf %in_r0, %in_c1 : f32
      %in_r1 = loop.load %x_b[%a0, %a1_r1, %a3] : memref<2x16x16xf32>
      %in_r1c0 = arith.mulf %in_r1, %in_c0 : f32
      %in_r1c1 = arith.mulf %in_r1, %in_c1 : f32
      loop.yield %in_r0c0, %in_r0c1, %in_r1c0, %in_r1c1 : f32, f32, f32, f32
    }
    loop.store %acc_r0c0, %bmm_b[%a0, %a1_r0, %a2_c0] : memref<2x16x16xf32>
    loop.store %acc_r0c1, %bmm_b[%a0, %a1_r0, %a2_c1] : memref<2x16x16xf32>
    loop.store %acc_r1c0, %bmm_b[%a0, %a1_r1, %a2_c0] : memref<2x16x16xf32>
    loop.store %acc_r1c1, %bmm_b[%a0, %a1_r1, %a2_c1] : memref<2x16x16xf32>
  }
  func.return %bmm : tensor<2x16x16xf32>
}


// CHECK:       tile.kernel @k_bmm
// CHECK-SAME:  schedule = #tile.schedule<thread = [2, 2], threads = [8, 8], k_chunk = 16>
// CHECK:       loop.for %a3_o = 0 to 1 reduce(add, add, add, add)
// CHECK-NEXT:    loop.for %a3_i = 0 to 16 reduce(add, add, add, add)
// CHECK-NEXT:      %a3 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a3_o, %a3_i)
// CHECK-NEXT:      %in_r0 = loop.load %x_b[%a0, %a1_r0, %a3] : memref<2x16x16xf32>
// CHECK-NOT:   loop.for
// CHECK:       func.return
