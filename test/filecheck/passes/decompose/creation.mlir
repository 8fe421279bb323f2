// RUN: deplo-opt %s -p decompose | filecheck %s

// Filled tensors are splat constants of the result type.
func.func @fills(%x: tensor<1x1x8x1xi64>) -> (tensor<i1>, tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) {
  %new_ones = torch.aten "new_ones.default"(self = %x) {size = [], dtype = i1} : (tensor<1x1x8x1xi64>) -> tensor<i1>
  %full = torch.aten "full.default"() {size = [2, 3], fill_value = 0xFFF0000000000000 : f64, dtype = f32} : () -> tensor<2x3xf32>
  %zeros = torch.aten "zeros.default"() {size = [4], dtype = i64} : () -> tensor<4xi64>
  %scalar_tensor = torch.aten "scalar_tensor.default"() {s = 2.500000e+00, dtype = f32} : () -> tensor<f32>
  func.return %new_ones, %full, %zeros, %scalar_tensor : tensor<i1>, tensor<2x3xf32>, tensor<4xi64>, tensor<f32>
}

// CHECK-LABEL: func.func @fills
// CHECK-NEXT:    %new_ones = ten.constant dense<true> : tensor<i1>
// CHECK-NEXT:    %full = ten.constant dense<0xff800000> : tensor<2x3xf32>
// CHECK-NEXT:    %zeros = ten.constant dense<0> : tensor<4xi64>
// CHECK-NEXT:    %scalar_tensor = ten.constant dense<2.500000e+00> : tensor<f32>

// arange(8) is an iota; other ranges compute start + step * i from one.
func.func @aranges() -> (tensor<8xi64>, tensor<5xi64>, tensor<4xf32>) {
  %arange = torch.aten "arange.default"() {end = 8} : () -> tensor<8xi64>
  %arange_1 = torch.aten "arange.start_step"() {start = 2, end = 12, step = 2} : () -> tensor<5xi64>
  %arange_2 = torch.aten "arange.start_step"() {start = 0, end = 2.000000e+00, step = 5.000000e-01, dtype = f32} : () -> tensor<4xf32>
  func.return %arange, %arange_1, %arange_2 : tensor<8xi64>, tensor<5xi64>, tensor<4xf32>
}

// CHECK-LABEL: func.func @aranges
// CHECK-NEXT:    %arange = ten.iota dim 0 : tensor<8xi64>
// CHECK-NEXT:    %pos = ten.iota dim 0 : tensor<5xi64>
// CHECK-NEXT:    %arange_1 = ten.map(%pos) : tensor<5xi64> -> tensor<5xi64> {
// CHECK-NEXT:    ^bb0(%[[I:.*]]: i64):
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-NEXT:      %[[M:.*]] = arith.muli %[[I]], %[[TWO]] : i64
// CHECK-NEXT:      %[[TWO2:.*]] = arith.constant 2 : i64
// CHECK-NEXT:      %[[A:.*]] = arith.addi %[[M]], %[[TWO2]] : i64
// CHECK-NEXT:      ten.yield %[[A]] : i64
// CHECK:         %pos_1 = ten.iota dim 0 : tensor<4xi64>
// CHECK-NEXT:    %arange_2 = ten.map(%pos_1) : tensor<4xi64> -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[J:.*]]: i64):
// CHECK-NEXT:      %[[F:.*]] = arith.sitofp %[[J]] : i64 to f64
// CHECK-NEXT:      %[[H:.*]] = arith.constant 5.000000e-01 : f64
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[F]], %[[H]] : f64
// CHECK-NEXT:      %[[R:.*]] = arith.truncf %[[P]] : f64 to f32
// CHECK-NEXT:      ten.yield %[[R]] : f32
