// RUN: deplo-opt %s -p cooperative-reduce | filecheck %s

// Softmax rows (a small 2x3x512 here): the max and the exp-sum reduces each become a
// strided loop and a combine (of their own kind); the normalising loop is strided. A row
// of 512 with two chained reductions gets a warp, sixteen elements a thread.

func.func @forward(%x: tensor<1x3x2x512xf32>) -> tensor<1x3x2x512xf32> {
  %y = tile.kernel @k_softmax axes(%a0 : 1 = free, %a1 : 3 = free, %a2 : 2 = free) ins(%xb = %x : tensor<1x3x2x512xf32>) outs(%yb : tensor<1x3x2x512xf32>) {
    %mx = loop.for %a3 = 0 to 512 reduce(max) -> f32 {
      %v = loop.load %xb[%a0, %a1, %a2, %a3] : memref<1x3x2x512xf32>
      loop.yield %v : f32
    }
    %sum = loop.for %a4 = 0 to 512 reduce(add) -> f32 {
      %v1 = loop.load %xb[%a0, %a1, %a2, %a4] : memref<1x3x2x512xf32>
      %d1 = arith.subf %v1, %mx : f32
      %e1 = math.exp %d1 : f32
      loop.yield %e1 : f32
    }
    %one = arith.constant 1.0 : f32
    %inv = arith.divf %one, %sum : f32
    loop.for %a5 = 0 to 512 {
      %v2 = loop.load %xb[%a0, %a1, %a2, %a5] : memref<1x3x2x512xf32>
      %d2 = arith.subf %v2, %mx : f32
      %e2 = math.exp %d2 : f32
      %o = arith.mulf %e2, %inv : f32
      loop.store %o, %yb[%a0, %a1, %a2, %a5] : memref<1x3x2x512xf32>
    }
  }
  func.return %y : tensor<1x3x2x512xf32>
}

// CHECK:      tile.kernel @k_softmax axes(%t : 32 = thread, %a0 : 1 = free, %a1 : 3 = free, %a2 : 2 = free)
// CHECK-NEXT:   %mx_part = tile.strided_for %a3 = %t to 512 step 32 reduce(max) -> f32 {
// CHECK:        %mx = tile.combine max %mx_part across %t : f32
// CHECK-NEXT:   %sum_part = tile.strided_for %a4 = %t to 512 step 32 reduce(add) -> f32 {
// CHECK-NEXT:     %v1 = loop.load %xb[%a0, %a1, %a2, %a4] : memref<1x3x2x512xf32>
// CHECK-NEXT:     %d1 = arith.subf %v1, %mx : f32
// CHECK:        %sum = tile.combine add %sum_part across %t : f32
// CHECK:        %inv = arith.divf %one, %sum : f32
// CHECK-NEXT:   tile.strided_for %a5 = %t to 512 step 32 {
