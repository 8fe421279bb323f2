// RUN: deplo-opt %s -p split-matmul-k | filecheck %s
// RUN: deplo-opt %s -p 'split-matmul-k{splits=2}' | filecheck %s

// An 8 x 8 output with K = 16: no tile of the cost model divides it (matmul_plan gives
// None), so it is left alone, even with an explicit splits.

func.func @small(%x: tensor<8x16xf32>, %w: tensor<8x16xf32>) -> tensor<8x8xf32> {
  %y = tile.kernel @k_small axes(%a0 : 8 = free, %a1 : 8 = free) ins(%x_b = %x : tensor<8x16xf32>, %w_b = %w : tensor<8x16xf32>) outs(%y_b : tensor<8x8xf32>) {
    %acc = loop.for %k = 0 to 16 reduce(add) -> f32 {
      %xv = loop.load %x_b[%a0, %k] : memref<8x16xf32>
      %wv = loop.load %w_b[%a1, %k] : memref<8x16xf32>
      %p = arith.mulf %xv, %wv : f32
      loop.yield %p : f32
    }
    loop.store %acc, %y_b[%a0, %a1] : memref<8x8xf32>
  }
  func.return %y : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @small
// CHECK-NEXT:  %y = tile.kernel @k_small axes(%a0 : 8 = free, %a1 : 8 = free)
// CHECK-NOT:   matmul_tile
// CHECK-NEXT:    %acc = loop.for %k = 0 to 16 reduce(add) -> f32 {
// CHECK-NOT:   tile.kernel
