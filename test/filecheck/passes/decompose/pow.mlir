// RUN: deplo-opt %s -p decompose | filecheck %s

// x ** 2 is x * x; x ** 0.5 is sqrt; any other exponent is math.powf.
func.func @pow(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %pow = torch.aten "pow.Tensor_Scalar"(self = %x) {exponent = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sqrt = torch.aten "pow.Tensor_Scalar"(self = %x) {exponent = 5.000000e-01} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %any = torch.aten "pow.Tensor_Scalar"(self = %x) {exponent = 1.700000e+00} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %pow, %sqrt, %any : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @pow
// CHECK-NEXT:    %pow = ten.map(%x) : tensor<4x8xf32> -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[A]], %[[A]] : f32
// CHECK-NEXT:      ten.yield %[[SQ]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %sqrt = ten.map(%x) : tensor<4x8xf32> -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[B:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = math.sqrt %[[B]] : f32
// CHECK-NEXT:      ten.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %any = ten.map(%x) : tensor<4x8xf32> -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[C:.*]]: f32):
// CHECK-NEXT:      %[[E:.*]] = arith.constant 1.700000e+00 : f32
// CHECK-NEXT:      %[[P:.*]] = math.powf %[[C]], %[[E]] : f32
// CHECK-NEXT:      ten.yield %[[P]] : f32
// CHECK-NEXT:    }
