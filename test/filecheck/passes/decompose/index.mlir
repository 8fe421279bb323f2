// RUN: deplo-opt %s -p decompose | filecheck %s

// The causal mask's `positions[batch_idx, q_idx]`: two index tensors on adjacent axes.
// The axes are merged into one by a view, the broadcast indices combine into one linear
// index (negative ones wrapped, as Python does), and one gather reads it.
func.func @two(%p: tensor<1x8xi64>, %b: tensor<1x1x1x1xi64>, %q: tensor<1x1x8x1xi64>) -> tensor<1x1x8x1xi64> {
  %index = torch.aten "index.Tensor"(self = %p, indices = %b, indices = %q) : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x8x1xi64>) -> tensor<1x1x8x1xi64>
  func.return %index : tensor<1x1x8x1xi64>
}

// CHECK-LABEL: func.func @two
// CHECK-NEXT:    %p_b = ten.index_map %p (d0) -> (0, d0) : tensor<1x8xi64> -> tensor<8xi64>
// CHECK-NEXT:    %b_b = ten.index_map %b (d0, d1, d2, d3) -> (d0, d1, 0, d3) : tensor<1x1x1x1xi64> -> tensor<1x1x8x1xi64>
// CHECK-NEXT:    %lin = ten.map(%b_b, %q) : tensor<1x1x8x1xi64>, tensor<1x1x8x1xi64> -> tensor<1x1x8x1xi64> {
// CHECK-NEXT:    ^bb0(%[[B:.*]]: i64, %[[Q:.*]]: i64):
// CHECK:           arith.cmpi slt, %[[B]]
// CHECK:           arith.muli %{{.*}}, %{{.*}} : i64
// CHECK:           arith.cmpi slt, %[[Q]]
// CHECK:           arith.select %{{.*}}, %{{.*}}, %[[Q]] : i64
// CHECK-NEXT:      %[[L:.*]] = arith.addi
// CHECK-NEXT:      ten.yield %[[L]] : i64
// CHECK-NEXT:    }
// CHECK-NEXT:    %index = ten.gather %p_b[%lin] axis 0 : tensor<8xi64>, tensor<1x1x8x1xi64> -> tensor<1x1x8x1xi64>

// One index tensor on a middle axis: a gather on that axis, no reshape.
func.func @middle(%x: tensor<3x5x2xf32>, %i: tensor<4xi64>) -> tensor<3x4x2xf32> {
  %index = torch.aten "index.Tensor"(self = %x, indices = %i) {indices = [false, true]} : (tensor<3x5x2xf32>, tensor<4xi64>) -> tensor<3x4x2xf32>
  func.return %index : tensor<3x4x2xf32>
}

// CHECK-LABEL: func.func @middle
// CHECK-NEXT:    %lin = ten.map(%i) : tensor<4xi64> -> tensor<4xi64> {
// CHECK:         %index = ten.gather %x[%lin] axis 1 : tensor<3x5x2xf32>, tensor<4xi64> -> tensor<3x4x2xf32>

// Indices on axes apart: their broadcast shape goes first, as in torch.
func.func @apart(%x: tensor<3x5x2xf32>, %i: tensor<4xi64>, %j: tensor<4xi64>) -> tensor<4x5xf32> {
  %index = torch.aten "index.Tensor"(self = %x, indices = %i, indices = %j) {indices = [true, false, true]} : (tensor<3x5x2xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<4x5xf32>
  func.return %index : tensor<4x5xf32>
}

// CHECK-LABEL: func.func @apart
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1) -> ((d0 floordiv 2), d1, (d0 mod 2)) : tensor<3x5x2xf32> -> tensor<6x5xf32>
// CHECK:         %index = ten.gather %x_b[%lin] axis 0 : tensor<6x5xf32>, tensor<4xi64> -> tensor<4x5xf32>
