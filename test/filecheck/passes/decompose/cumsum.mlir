// RUN: deplo-opt %s -p decompose | filecheck %s

// cumsum: x read along a second copy of the axis, kept where j <= i, summed over j.
// A boolean input sums in the int64 result type.
func.func @cumsum(%x: tensor<1x8xi1>) -> tensor<1x8xi64> {
  %cumsum = torch.aten "cumsum.default"(self = %x) {dim = -1} : (tensor<1x8xi1>) -> tensor<1x8xi64>
  func.return %cumsum : tensor<1x8xi64>
}

// CHECK-LABEL: func.func @cumsum
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1, d2) -> (d0, d2) : tensor<1x8xi1> -> tensor<1x8x8xi1>
// CHECK-NEXT:    %i = ten.iota dim 1 : tensor<1x8x8xi64>
// CHECK-NEXT:    %j = ten.iota dim 2 : tensor<1x8x8xi64>
// CHECK-NEXT:    %terms = ten.map(%x_b, %i, %j) : tensor<1x8x8xi1>, tensor<1x8x8xi64>, tensor<1x8x8xi64> -> tensor<1x8x8xi64> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i1, %[[I:.*]]: i64, %[[J:.*]]: i64):
// CHECK-NEXT:      %[[LE:.*]] = arith.cmpi sle, %[[J]], %[[I]] : i64
// CHECK:           %[[V:.*]] = arith.select %[[X]]
// CHECK:           %[[T:.*]] = arith.select %[[LE]], %[[V]], %{{.*}} : i64
// CHECK-NEXT:      ten.yield %[[T]] : i64
// CHECK-NEXT:    }
// CHECK-NEXT:    %cumsum = ten.reduce add %terms dims [2] : tensor<1x8x8xi64> -> tensor<1x8xi64>
