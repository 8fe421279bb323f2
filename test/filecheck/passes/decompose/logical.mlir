// RUN: deplo-opt %s -p decompose | filecheck %s

// The causal mask's `&`: a 0-d `true` broadcast against the mask, one andi.
func.func @and(%t: tensor<i1>, %m: tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1> {
  %and = torch.aten "__and__.Tensor"(self = %t, other = %m) : (tensor<i1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
  func.return %and : tensor<1x1x8x8xi1>
}

// CHECK-LABEL: func.func @and
// CHECK-NEXT:    %t_b = ten.index_map %t (d0, d1, d2, d3) -> () : tensor<i1> -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    %and = ten.map(%t_b, %m) : tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1> -> tensor<1x1x8x8xi1> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: i1, %[[B:.*]]: i1):
// CHECK-NEXT:      %[[C:.*]] = arith.andi %[[A]], %[[B]] : i1
// CHECK-NEXT:      ten.yield %[[C]] : i1

// logical_* test truth values; bitwise_* work on the integer's bits; not is xor with ones.
func.func @forms(%x: tensor<4xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>, tensor<4xi1>) {
  %logical_or = torch.aten "logical_or.default"(self = %x, other = %b) : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xi1>
  %bitwise_xor = torch.aten "bitwise_xor.Scalar"(self = %i) {other = 6} : (tensor<4xi64>) -> tensor<4xi64>
  %bitwise_not = torch.aten "bitwise_not.default"(self = %i) : (tensor<4xi64>) -> tensor<4xi64>
  %logical_not = torch.aten "logical_not.default"(self = %b) : (tensor<4xi1>) -> tensor<4xi1>
  func.return %logical_or, %bitwise_xor, %bitwise_not, %logical_not : tensor<4xi1>, tensor<4xi64>, tensor<4xi64>, tensor<4xi1>
}

// CHECK-LABEL: func.func @forms
// CHECK:         %logical_or = ten.map(%x, %b) : tensor<4xf32>, tensor<4xi1> -> tensor<4xi1> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[B:.*]]: i1):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[T:.*]] = arith.cmpf une, %[[X]], %[[Z]] : f32
// CHECK-NEXT:      %[[O:.*]] = arith.ori %[[T]], %[[B]] : i1
// CHECK:         %bitwise_xor = ten.map(%i)
// CHECK:           %[[SIX:.*]] = arith.constant 6 : i64
// CHECK-NEXT:      arith.xori %{{.*}}, %[[SIX]] : i64
// CHECK:         %bitwise_not = ten.map(%i)
// CHECK:           %[[ONES:.*]] = arith.constant -1 : i64
// CHECK-NEXT:      arith.xori %{{.*}}, %[[ONES]] : i64
// CHECK:         %logical_not = ten.map(%b)
// CHECK:           %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT:      arith.xori %{{.*}}, %[[TRUE]] : i1
