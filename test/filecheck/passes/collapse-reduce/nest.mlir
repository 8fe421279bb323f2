// RUN: deplo-opt %s -p collapse-reduce | filecheck %s
// RUN: deplo-opt %s -p collapse-reduce,collapse-reduce | filecheck %s

// x.sum((0, 1, 2)) of a (2, 3, 8) tensor after tileify: three reduce loops, one in the
// other, each adding the next one's result. They collapse into one loop of 48 whose
// iteration stands for (i floordiv 24, (i floordiv 8) mod 3, i mod 8), the same elements
// in the same order (the second RUN line: idempotent). @kinds adds the rows' maxima:
// other combine kinds, left as it is; so is @not_perfect, whose outer body does more
// than add the inner loop's result.

func.func @nest(%x: tensor<2x3x8xf32>) -> tensor<f32> {
  %sum = tile.kernel @k_sum axes() ins(%x_b = %x : tensor<2x3x8xf32>) outs(%sum_b : tensor<f32>) {
    %sum_1 = loop.for %a0 = 0 to 2 reduce(add) -> f32 {
      %sum_2 = loop.for %a1 = 0 to 3 reduce(add) -> f32 {
        %sum_3 = loop.for %a2 = 0 to 8 reduce(add) -> f32 {
          %in = loop.load %x_b[%a0, %a1, %a2] : memref<2x3x8xf32>
          loop.yield %in : f32
        }
        loop.yield %sum_3 : f32
      }
      loop.yield %sum_2 : f32
    }
    loop.store %sum_1, %sum_b[] : memref<f32>
  }
  func.return %sum : tensor<f32>
}

// CHECK-LABEL: func.func @nest
// CHECK:       %sum_1 = loop.for %a0_a1_a2 = 0 to 48 reduce(add) -> f32 {
// CHECK-NEXT:    %a0_a1 = affine.apply affine_map<(d0) -> ((d0 floordiv 8))> (%a0_a1_a2)
// CHECK-NEXT:    %a2 = affine.apply affine_map<(d0) -> ((d0 mod 8))> (%a0_a1_a2)
// CHECK-NEXT:    %a0 = affine.apply affine_map<(d0) -> ((d0 floordiv 3))> (%a0_a1)
// CHECK-NEXT:    %a1 = affine.apply affine_map<(d0) -> ((d0 mod 3))> (%a0_a1)
// CHECK-NEXT:    %in = loop.load %x_b[%a0, %a1, %a2] : memref<2x3x8xf32>
// CHECK-NEXT:    loop.yield %in : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  loop.store %sum_1, %sum_b[] : memref<f32>

func.func @kinds(%x: tensor<2x8xf32>) -> tensor<f32> {
  %y = tile.kernel @k_kinds axes() ins(%x_b = %x : tensor<2x8xf32>) outs(%y_b : tensor<f32>) {
    %s = loop.for %a0 = 0 to 2 reduce(add) -> f32 {
      %m = loop.for %a1 = 0 to 8 reduce(max) -> f32 {
        %in = loop.load %x_b[%a0, %a1] : memref<2x8xf32>
        loop.yield %in : f32
      }
      loop.yield %m : f32
    }
    loop.store %s, %y_b[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK-LABEL: func.func @kinds
// CHECK:       %s = loop.for %a0 = 0 to 2 reduce(add) -> f32 {
// CHECK-NEXT:    %m = loop.for %a1 = 0 to 8 reduce(max) -> f32 {

func.func @not_perfect(%x: tensor<2x8xf32>) -> tensor<f32> {
  %y = tile.kernel @k_not_perfect axes() ins(%x_b = %x : tensor<2x8xf32>) outs(%y_b : tensor<f32>) {
    %s = loop.for %a0 = 0 to 2 reduce(add) -> f32 {
      %r = loop.for %a1 = 0 to 8 reduce(add) -> f32 {
        %in = loop.load %x_b[%a0, %a1] : memref<2x8xf32>
        loop.yield %in : f32
      }
      %sq = arith.mulf %r, %r : f32
      loop.yield %sq : f32
    }
    loop.store %s, %y_b[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK-LABEL: func.func @not_perfect
// CHECK:       %s = loop.for %a0 = 0 to 2 reduce(add) -> f32 {
// CHECK-NEXT:    %r = loop.for %a1 = 0 to 8 reduce(add) -> f32 {

func.func @yield_only(%x: tensor<2x8xf32>) -> tensor<f32> {
  %y = tile.kernel @k_yield_only axes() ins(%x_b = %x : tensor<2x8xf32>) outs(%y_b : tensor<f32>) {
    %c = arith.constant 1.0 : f32
    %s = loop.for %a0 = 0 to 2 reduce(add) -> f32 {
      loop.yield %c : f32
    }
    loop.store %s, %y_b[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// A reduce loop whose body is its yield alone (masked.var's count of a row) is left.
// CHECK-LABEL: func.func @yield_only
// CHECK:       %s = loop.for %a0 = 0 to 2 reduce(add) -> f32 {
// CHECK-NEXT:    loop.yield %c : f32
