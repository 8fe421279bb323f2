// RUN: deplo-opt %s -p decompose | filecheck %s

// rms_norm: sum of squares, rsqrt(mean + eps) on the reduced tensor, then x * rstd * weight.
func.func @forward(%w: tensor<64xf32>, %x: tensor<2x4x64xf32>) -> tensor<2x4x64xf32> {
  %rms_norm = torch.aten "rms_norm.default"(input = %x, weight = %w) {normalized_shape = [64], eps = 1.000000e-06, source = "model.py:3: y = norm(x)"} : (tensor<2x4x64xf32>, tensor<64xf32>) -> tensor<2x4x64xf32>
  func.return %rms_norm : tensor<2x4x64xf32>
}

// CHECK:      func.func @forward(%w: tensor<64xf32>, %x: tensor<2x4x64xf32>) -> tensor<2x4x64xf32> {
// CHECK-NEXT:   %sq = ten.map(%x) : tensor<2x4x64xf32> -> tensor<2x4x64xf32> {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT:     %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT:     ten.yield %[[SQ]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %sumsq = ten.reduce add %sq dims [2] : tensor<2x4x64xf32> -> tensor<2x4xf32>
// CHECK-NEXT:   %rstd = ten.map(%sumsq) : tensor<2x4xf32> -> tensor<2x4xf32> {
// CHECK-NEXT:   ^bb0(%[[S:.*]]: f32):
// CHECK-NEXT:     %[[N:.*]] = arith.constant 6.400000e+01 : f32
// CHECK-NEXT:     %[[MEAN:.*]] = arith.divf %[[S]], %[[N]] : f32
// CHECK-NEXT:     %[[EPS:.*]] = arith.constant 1.000000e-06 : f32
// CHECK-NEXT:     %[[V:.*]] = arith.addf %[[MEAN]], %[[EPS]] : f32
// CHECK-NEXT:     %[[R:.*]] = math.rsqrt %[[V]] : f32
// CHECK-NEXT:     ten.yield %[[R]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %rstd_b = ten.index_map %rstd (d0, d1, d2) -> (d0, d1) : tensor<2x4xf32> -> tensor<2x4x64xf32>
// CHECK-NEXT:   %w_b = ten.index_map %w (d0, d1, d2) -> (d2) : tensor<64xf32> -> tensor<2x4x64xf32>
// CHECK-NEXT:   %rms_norm = ten.map(%x, %rstd_b, %w_b) : tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<2x4x64xf32> -> tensor<2x4x64xf32> {
// CHECK-NEXT:   ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:     %[[AB:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:     %[[ABC:.*]] = arith.mulf %[[AB]], %[[C]] : f32
// CHECK-NEXT:     ten.yield %[[ABC]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %rms_norm : tensor<2x4x64xf32>

// eps left out is torch.finfo(f32).eps; no weight, no weight operand.
func.func @no_weight(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %rms_norm = torch.aten "rms_norm.default"(input = %x) {normalized_shape = [16]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return %rms_norm : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @no_weight
// CHECK:         arith.constant 1.1920929e-07 : f32
// CHECK:         %rms_norm = ten.map(%x, %rstd_b) : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
