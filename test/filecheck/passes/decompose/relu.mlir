// RUN: deplo-opt %s -p decompose | filecheck %s

func.func @relu(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %relu = torch.aten "relu.default"(self = %x) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return %relu : tensor<16x16xf32>
}

// CHECK-LABEL: func.func @relu
// CHECK-NEXT:    %relu = ten.map(%x) : tensor<16x16xf32> -> tensor<16x16xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.maximumf %[[X]], %[[Z]] : f32
// CHECK-NEXT:      ten.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %relu : tensor<16x16xf32>
