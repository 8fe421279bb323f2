// RUN: deplo-opt %s -p decompose | filecheck %s

func.func @reductions(%x: tensor<2x3x8xf32>) -> (tensor<2x1x8xf32>, tensor<2x3xf32>, tensor<f32>) {
  %sum = torch.aten "sum.dim_IntList"(self = %x) {dim = [1], keepdim = true} : (tensor<2x3x8xf32>) -> tensor<2x1x8xf32>
  %amax = torch.aten "amax.default"(self = %x) {dim = [-1]} : (tensor<2x3x8xf32>) -> tensor<2x3xf32>
  %max = torch.aten "max.default"(self = %x) : (tensor<2x3x8xf32>) -> tensor<f32>
  func.return %sum, %amax, %max : tensor<2x1x8xf32>, tensor<2x3xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %sum_r = ten.reduce add %x dims [1] : tensor<2x3x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %sum = ten.index_map %sum_r (d0, d1, d2) -> (d0, d2) : tensor<2x8xf32> -> tensor<2x1x8xf32>
// CHECK-NEXT:    %amax = ten.reduce max %x dims [2] : tensor<2x3x8xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %max = ten.reduce max %x dims [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>

// 16-bit sums accumulate in f32 and round once.
func.func @sum_bf16(%x: tensor<4x8xbf16>) -> tensor<4xbf16> {
  %sum = torch.aten "sum.dim_IntList"(self = %x) {dim = [1]} : (tensor<4x8xbf16>) -> tensor<4xbf16>
  func.return %sum : tensor<4xbf16>
}

// CHECK-LABEL: func.func @sum_bf16
// CHECK-NEXT:    %[[W:.*]] = ten.map(%x) : tensor<4x8xbf16> -> tensor<4x8xf32> {
// CHECK:         %[[R:.*]] = ten.reduce add %[[W]] dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %sum = ten.map(%[[R]]) : tensor<4xf32> -> tensor<4xbf16> {
// CHECK:           arith.truncf
