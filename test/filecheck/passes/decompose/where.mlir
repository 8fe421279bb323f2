// RUN: deplo-opt %s -p decompose | filecheck %s

// masked_fill with -inf: the mask broadcast to the scores, one select; -inf prints as
// its f32 bit pattern. The condition is always the map's first operand.
func.func @masked_fill(%s: tensor<1x4x8x8xf32>, %m: tensor<1x1x8x8xi1>) -> tensor<1x4x8x8xf32> {
  %masked_fill = torch.aten "masked_fill.Scalar"(self = %s, mask = %m) {value = 0xFFF0000000000000 : f64} : (tensor<1x4x8x8xf32>, tensor<1x1x8x8xi1>) -> tensor<1x4x8x8xf32>
  func.return %masked_fill : tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func.func @masked_fill
// CHECK-NEXT:    %m_b = ten.index_map %m (d0, d1, d2, d3) -> (d0, 0, d2, d3) : tensor<1x1x8x8xi1> -> tensor<1x4x8x8xi1>
// CHECK-NEXT:    %masked_fill = ten.map(%m_b, %s) : tensor<1x4x8x8xi1>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> {
// CHECK-NEXT:    ^bb0(%[[M:.*]]: i1, %[[S:.*]]: f32):
// CHECK-NEXT:      %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[M]], %[[NINF]], %[[S]] : f32
// CHECK-NEXT:      ten.yield %[[R]] : f32

// where with a tensor and a number (a constant of the result type).
func.func @where(%c: tensor<8x8xi1>, %x: tensor<8xf32>) -> tensor<8x8xf32> {
  %where = torch.aten "where.ScalarOther"(condition = %c, self = %x) {other = 0} : (tensor<8x8xi1>, tensor<8xf32>) -> tensor<8x8xf32>
  func.return %where : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @where
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1) -> (d1) : tensor<8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:    %where = ten.map(%c, %x_b) : tensor<8x8xi1>, tensor<8x8xf32> -> tensor<8x8xf32> {
// CHECK-NEXT:    ^bb0(%[[C:.*]]: i1, %[[X:.*]]: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[C]], %[[X]], %[[Z]] : f32
// CHECK-NEXT:      ten.yield %[[R]] : f32
