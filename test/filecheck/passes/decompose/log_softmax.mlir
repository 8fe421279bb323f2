// RUN: deplo-opt %s -p decompose | filecheck %s

// log_softmax: x - max - log(sum(exp(x - max))); exp(x - max) is summed, not stored.
func.func @log_softmax(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %ls = torch.aten "_log_softmax.default"(self = %x) {dim = 1, half_to_float = false} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %ls : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK-NEXT:    %max = ten.reduce max %x dims [1] : tensor<3x4xf32> -> tensor<3xf32>
// CHECK-NEXT:    %max_b = ten.index_map %max (d0, d1) -> (d0) : tensor<3xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    %exp = ten.map(%x, %max_b)
// CHECK:           math.exp
// CHECK:         %sum = ten.reduce add %exp dims [1] : tensor<3x4xf32> -> tensor<3xf32>
// CHECK-NEXT:    %sum_b = ten.index_map %sum (d0, d1) -> (d0) : tensor<3xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    %ls = ten.map(%x, %max_b, %sum_b)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32, %[[S:.*]]: f32):
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[V]], %[[M]] : f32
// CHECK-NEXT:      %[[L:.*]] = math.log %[[S]] : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.subf %[[D]], %[[L]] : f32
// CHECK-NEXT:      ten.yield %[[Y]] : f32
