// RUN: deplo-opt %s -p decompose | filecheck %s

// The causal mask's test: positions compared (signed), broadcast against each other.
func.func @le(%q: tensor<1x1x1x8xi64>, %k: tensor<1x1x8x1xi64>) -> tensor<1x1x8x8xi1> {
  %le = torch.aten "le.Tensor"(self = %q, other = %k) : (tensor<1x1x1x8xi64>, tensor<1x1x8x1xi64>) -> tensor<1x1x8x8xi1>
  func.return %le : tensor<1x1x8x8xi1>
}

// CHECK-LABEL: func.func @le
// CHECK-NEXT:    %q_b = ten.index_map %q (d0, d1, d2, d3) -> (d0, d1, 0, d3) : tensor<1x1x1x8xi64> -> tensor<1x1x8x8xi64>
// CHECK-NEXT:    %k_b = ten.index_map %k (d0, d1, d2, d3) -> (d0, d1, d2, 0) : tensor<1x1x8x1xi64> -> tensor<1x1x8x8xi64>
// CHECK-NEXT:    %le = ten.map(%q_b, %k_b) : tensor<1x1x8x8xi64>, tensor<1x1x8x8xi64> -> tensor<1x1x8x8xi1> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: i64, %[[B:.*]]: i64):
// CHECK-NEXT:      %[[C:.*]] = arith.cmpi sle, %[[A]], %[[B]] : i64
// CHECK-NEXT:      ten.yield %[[C]] : i1

// Floats compare ordered, except ne (NaN != x); an int scalar against a float tensor is
// a float constant; an int tensor against a float scalar compares in f32.
func.func @forms(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %lt = torch.aten "lt.Scalar"(self = %x) {other = 1} : (tensor<4xf32>) -> tensor<4xi1>
  %ne = torch.aten "ne.Tensor"(self = %x, other = %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %ge = torch.aten "ge.Scalar"(self = %i) {other = 2.500000e+00} : (tensor<4xi64>) -> tensor<4xi1>
  func.return %lt, %ne, %ge : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// CHECK-LABEL: func.func @forms
// CHECK:         %lt = ten.map(%x)
// CHECK:           %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      arith.cmpf olt, %{{.*}}, %[[ONE]] : f32
// CHECK:         %ne = ten.map(%x, %x)
// CHECK:           arith.cmpf une
// CHECK:         %ge = ten.map(%i) : tensor<4xi64> -> tensor<4xi1> {
// CHECK-NEXT:    ^bb0(%[[I:.*]]: i64):
// CHECK-NEXT:      %[[F:.*]] = arith.sitofp %[[I]] : i64 to f32
// CHECK-NEXT:      %[[C:.*]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT:      arith.cmpf oge, %[[F]], %[[C]] : f32

// Booleans compare unsigned: as a signed i1, true would be -1 < false.
func.func @bools(%a: tensor<4xi1>, %b: tensor<4xi1>) -> tensor<4xi1> {
  %gt = torch.aten "gt.Tensor"(self = %a, other = %b) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %gt : tensor<4xi1>
}

// CHECK-LABEL: func.func @bools
// CHECK:           arith.cmpi ugt, %{{.*}}, %{{.*}} : i1
