// RUN: deplo-opt %s -p decompose | filecheck %s

// elu: x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale; gelu with erf;
// leaky_relu: x > 0 ? x : x * slope.
func.func @activation(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %elu = torch.aten "elu.default"(self = %x) {alpha = 0.75, scale = 2.0, input_scale = 3.0} : (tensor<8xf32>) -> tensor<8xf32>
  %gelu = torch.aten "gelu.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  %leaky = torch.aten "leaky_relu.default"(self = %x) {negative_slope = 0.25} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %elu, %gelu, %leaky : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @activation
// CHECK-NEXT:    %elu = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[IS:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      %[[XS:.*]] = arith.mulf %[[A]], %[[IS]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.expm1 %[[XS]] : f32
// CHECK-NEXT:      %[[AS:.*]] = arith.constant 1.500000e+00 : f32
// CHECK-NEXT:      %[[NEG:.*]] = arith.mulf %[[E]], %[[AS]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      %[[POS:.*]] = arith.mulf %[[A]], %[[S]] : f32
// CHECK-NEXT:      %[[LE:.*]] = arith.cmpf ole, %[[A]], %[[Z]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[LE]], %[[NEG]], %[[POS]] : f32
// CHECK-NEXT:      ten.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %gelu = ten.map(%x)
// CHECK:           arith.constant 0.707106769 : f32
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      math.erf
// CHECK:         %leaky = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[B:.*]]: f32):
// CHECK-NEXT:      %[[Z2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[K:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:      %[[BK:.*]] = arith.mulf %[[B]], %[[K]] : f32
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[B]], %[[Z2]] : f32
// CHECK-NEXT:      %[[L:.*]] = arith.select %[[GT]], %[[B]], %[[BK]] : f32
// CHECK-NEXT:      ten.yield %[[L]] : f32
