// RUN: deplo-opt %s -p decompose | filecheck %s

// linear without bias: the (M, K, N) product space of matmul, the weight read transposed.
func.func @linear(%x: tensor<1x8x64xf32>, %w: tensor<32x64xf32>) -> tensor<1x8x32xf32> {
  %linear = torch.aten "linear.default"(input = %x, weight = %w) : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
  func.return %linear : tensor<1x8x32xf32>
}

// CHECK-LABEL: func.func @linear
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1, d2, d3) -> (d0, d1, d2) : tensor<1x8x64xf32> -> tensor<1x8x64x32xf32>
// CHECK-NEXT:    %w_b = ten.index_map %w (d0, d1, d2, d3) -> (d3, d2) : tensor<32x64xf32> -> tensor<1x8x64x32xf32>
// CHECK-NEXT:    %prod = ten.map(%x_b, %w_b) : tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32> -> tensor<1x8x64x32xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:      ten.yield %[[P]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %linear = ten.reduce add %prod dims [2] : tensor<1x8x64x32xf32> -> tensor<1x8x32xf32>
// CHECK-NEXT:    func.return %linear : tensor<1x8x32xf32>

// With a bias: one reduce, then the bias (broadcast along the rows) added in a map.
func.func @biased(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %linear = torch.aten "linear.default"(input = %x, weight = %w, bias = %b) : (tensor<8x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  func.return %linear : tensor<8x32xf32>
}

// CHECK-LABEL: func.func @biased
// CHECK:         %acc = ten.reduce add %prod dims [1] : tensor<8x64x32xf32> -> tensor<8x32xf32>
// CHECK-NEXT:    %b_b = ten.index_map %b (d0, d1) -> (d1) : tensor<32xf32> -> tensor<8x32xf32>
// CHECK-NEXT:    %linear = ten.map(%acc, %b_b) : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32> {
// CHECK-NEXT:    ^bb0(%[[S:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:      %[[R:.*]] = arith.addf %[[S]], %[[C]] : f32
// CHECK-NEXT:      ten.yield %[[R]] : f32
// CHECK-NOT:     ten.reduce
