// RUN: deplo-opt %s -p decompose | filecheck %s

// Two tensors: the smaller is broadcast by an index_map, then one ten.map.
func.func @add(%x: tensor<16x64xf32>, %y: tensor<64xf32>) -> tensor<16x64xf32> {
  %add = torch.aten "add.Tensor"(self = %x, other = %y) : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  func.return %add : tensor<16x64xf32>
}

// CHECK-LABEL: func.func @add
// CHECK-NEXT:    %y_b = ten.index_map %y (d0, d1) -> (d1) : tensor<64xf32> -> tensor<16x64xf32>
// CHECK-NEXT:    %add = ten.map(%x, %y_b) : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[C:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:      ten.yield %[[C]] : f32
// CHECK-NEXT:    }

// Both sides broadcast; size-1 axes pin to index 0.
func.func @sub(%x: tensor<4x1xf32>, %y: tensor<1x6xf32>) -> tensor<4x6xf32> {
  %sub = torch.aten "sub.Tensor"(self = %x, other = %y) : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  func.return %sub : tensor<4x6xf32>
}

// CHECK-LABEL: func.func @sub
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1) -> (d0, 0) : tensor<4x1xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %y_b = ten.index_map %y (d0, d1) -> (0, d1) : tensor<1x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %sub = ten.map(%x_b, %y_b)
// CHECK:           arith.subf

// A Python number is a constant in the body; alpha scales `other`.
func.func @scalars(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %mul = torch.aten "mul.Tensor"(self = %x) {other = 2} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %div = torch.aten "div.Tensor"(self = %x) {other = 7.000000e+00} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %rsub = torch.aten "rsub.Scalar"(self = %x) {other = 1} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %add = torch.aten "add.Tensor"(self = %x, other = %x) {alpha = 3} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %mul, %div, %rsub, %add : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @scalars
// CHECK:         %mul = ten.map(%x) : tensor<3x4xf32> -> tensor<3x4xf32> {
// CHECK-NEXT:    ^bb0(%[[M:.*]]: f32):
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      arith.mulf %[[M]], %[[TWO]] : f32
// CHECK:         %div = ten.map(%x)
// CHECK:           arith.constant 7.000000e+00 : f32
// CHECK-NEXT:      arith.divf
// CHECK:         %rsub = ten.map(%x)
// CHECK-NEXT:    ^bb0(%[[R:.*]]: f32):
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      arith.subf %[[ONE]], %[[R]] : f32
// CHECK:         %add = ten.map(%x, %x)
// CHECK:           arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.addf

// Type promotion: the int operand is cast to the result's element type in the body.
func.func @promote(%x: tensor<4xi64>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %mul = torch.aten "mul.Tensor"(self = %x, other = %y) : (tensor<4xi64>, tensor<4xf32>) -> tensor<4xf32>
  func.return %mul : tensor<4xf32>
}

// CHECK-LABEL: func.func @promote
// CHECK:         ^bb0(%[[I:.*]]: i64, %[[F:.*]]: f32):
// CHECK-NEXT:      %[[C:.*]] = arith.sitofp %[[I]] : i64 to f32
// CHECK-NEXT:      arith.mulf %[[C]], %[[F]] : f32
