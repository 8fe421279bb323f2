// RUN: deplo-opt %s -p decompose | filecheck %s

// matmul: both operands viewed in the (M, K, N) product space, multiplied, summed over K.
func.func @mm(%a: tensor<16x64xf32>, %b: tensor<64x8xf32>) -> tensor<16x8xf32> {
  %matmul = torch.aten "matmul.default"(self = %a, other = %b) : (tensor<16x64xf32>, tensor<64x8xf32>) -> tensor<16x8xf32>
  func.return %matmul : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @mm
// CHECK-NEXT:    %a_b = ten.index_map %a (d0, d1, d2) -> (d0, d1) : tensor<16x64xf32> -> tensor<16x64x8xf32>
// CHECK-NEXT:    %b_b = ten.index_map %b (d0, d1, d2) -> (d1, d2) : tensor<64x8xf32> -> tensor<16x64x8xf32>
// CHECK-NEXT:    %prod = ten.map(%a_b, %b_b) : tensor<16x64x8xf32>, tensor<16x64x8xf32> -> tensor<16x64x8xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32):
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      ten.yield %[[P]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %matmul = ten.reduce add %prod dims [1] : tensor<16x64x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT:    func.return %matmul : tensor<16x8xf32>

// Batch axes broadcast (size 1 pins to 0, a missing axis is dropped).
func.func @batched(%a: tensor<2x1x5x7xf32>, %b: tensor<3x7x4xf32>) -> tensor<2x3x5x4xf32> {
  %matmul = torch.aten "matmul.default"(self = %a, other = %b) : (tensor<2x1x5x7xf32>, tensor<3x7x4xf32>) -> tensor<2x3x5x4xf32>
  func.return %matmul : tensor<2x3x5x4xf32>
}

// CHECK-LABEL: func.func @batched
// CHECK-NEXT:    %a_b = ten.index_map %a (d0, d1, d2, d3, d4) -> (d0, 0, d2, d3) : tensor<2x1x5x7xf32> -> tensor<2x3x5x7x4xf32>
// CHECK-NEXT:    %b_b = ten.index_map %b (d0, d1, d2, d3, d4) -> (d1, d3, d4) : tensor<3x7x4xf32> -> tensor<2x3x5x7x4xf32>
// CHECK:         %matmul = ten.reduce add %prod dims [3] : tensor<2x3x5x7x4xf32> -> tensor<2x3x5x4xf32>

// bmm and a matrix-vector product (a 1-D operand has no N axis).
func.func @bmm_mv(%a: tensor<2x5x7xf32>, %b: tensor<2x7x3xf32>, %v: tensor<7xf32>) -> (tensor<2x5x3xf32>, tensor<2x5xf32>) {
  %bmm = torch.aten "bmm.default"(self = %a, mat2 = %b) : (tensor<2x5x7xf32>, tensor<2x7x3xf32>) -> tensor<2x5x3xf32>
  %mv = torch.aten "matmul.default"(self = %a, other = %v) : (tensor<2x5x7xf32>, tensor<7xf32>) -> tensor<2x5xf32>
  func.return %bmm, %mv : tensor<2x5x3xf32>, tensor<2x5xf32>
}

// CHECK-LABEL: func.func @bmm_mv
// CHECK:         %bmm = ten.reduce add %{{.*}} dims [2] : tensor<2x5x7x3xf32> -> tensor<2x5x3xf32>
// CHECK:         %v_b = ten.index_map %v (d0, d1, d2) -> (d2) : tensor<7xf32> -> tensor<2x5x7xf32>
// CHECK:         %mv = ten.reduce add %{{.*}} dims [2] : tensor<2x5x7xf32> -> tensor<2x5xf32>
