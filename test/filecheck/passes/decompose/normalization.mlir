// RUN: deplo-opt %s -p decompose | filecheck %s

// layer_norm over the last axis: mean, squared deviations, rstd = rsqrt(m2 / n + eps),
// then one map (x - mean) * rstd * weight; mean and rstd are results too (size-1 axis).
func.func @layer_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %out, %mean, %rstd = torch.aten "native_layer_norm.default"(input = %x, weight = %w) {normalized_shape = [8], eps = 1.0e-05 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  func.return %out, %mean, %rstd : tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT:    %sum = ten.reduce add %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %mean_r = ten.map(%sum) : tensor<4xf32> -> tensor<4xf32> {
// CHECK:         %m2 = ten.reduce add %dev2 dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %rstd_r = ten.map(%m2) : tensor<4xf32> -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[S:.*]]: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-NEXT:      %[[VAR:.*]] = arith.divf %[[S]], %[[N]] : f32
// CHECK-NEXT:      %[[EPS:.*]] = arith.constant 1.000000e-05 : f32
// CHECK-NEXT:      %[[VE:.*]] = arith.addf %[[VAR]], %[[EPS]] : f32
// CHECK-NEXT:      %[[R:.*]] = math.rsqrt %[[VE]] : f32
// CHECK-NEXT:      ten.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK:         %w_b = ten.index_map %w (d0, d1) -> (d1) : tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %out = ten.map(%x, %{{.*}}, %rstd_b, %w_b)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32, %[[RS:.*]]: f32, %[[W:.*]]: f32):
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[V]], %[[M]] : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[D]], %[[RS]] : f32
// CHECK-NEXT:      %[[YW:.*]] = arith.mulf %[[Y]], %[[W]] : f32
// CHECK-NEXT:      ten.yield %[[YW]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %mean = ten.index_map %mean_r (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %rstd = ten.index_map %rstd_r (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    func.return %out, %mean, %rstd

// group_norm: the channels seen as (group, channels per group), the statistics per
// (N, group), read back at channel c as c floordiv 2.
func.func @group_norm(%x: tensor<2x6x5xf32>, %b: tensor<6xf32>) -> (tensor<2x6x5xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %out, %mean, %rstd = torch.aten "native_group_norm.default"(input = %x, bias = %b) {N = 2, C = 6, HxW = 5, group = 3, eps = 1.0e-05 : f64} : (tensor<2x6x5xf32>, tensor<6xf32>) -> (tensor<2x6x5xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  func.return %out, %mean, %rstd : tensor<2x6x5xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @group_norm
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1, d2, d3) -> (d0, ((d1 * 2) + d2), d3) : tensor<2x6x5xf32> -> tensor<2x3x2x5xf32>
// CHECK-NEXT:    %sum = ten.reduce add %x_b dims [2, 3] : tensor<2x3x2x5xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %mean = ten.map(%sum) : tensor<2x3xf32> -> tensor<2x3xf32> {
// CHECK:           arith.constant 1.000000e+01 : f32
// CHECK:         %m2 = ten.reduce add %dev2 dims [2, 3] : tensor<2x3x2x5xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %rstd = ten.map(%m2) : tensor<2x3xf32> -> tensor<2x3xf32> {
// CHECK:         %[[MB:.*]] = ten.index_map %mean (d0, d1, d2) -> (d0, (d1 floordiv 2)) : tensor<2x3xf32> -> tensor<2x6x5xf32>
// CHECK-NEXT:    %rstd_b = ten.index_map %rstd (d0, d1, d2) -> (d0, (d1 floordiv 2)) : tensor<2x3xf32> -> tensor<2x6x5xf32>
// CHECK-NEXT:    %b_b = ten.index_map %b (d0, d1, d2) -> (d1) : tensor<6xf32> -> tensor<2x6x5xf32>
// CHECK-NEXT:    %out = ten.map(%x, %[[MB]], %rstd_b, %b_b)
// CHECK:           arith.addf
// CHECK:         func.return %out, %mean, %rstd

// Inference batch norm: the running statistics, per channel (axis 1); the two other
// results are empty.
func.func @batch_norm(%x: tensor<2x3x5xf32>, %rm: tensor<3xf32>, %rv: tensor<3xf32>) -> (tensor<2x3x5xf32>, tensor<0xf32>) {
  %out, %a, %b = torch.aten "_native_batch_norm_legit_no_training.default"(input = %x, running_mean = %rm, running_var = %rv) {momentum = 0.1 : f64, eps = 1.0e-05 : f64} : (tensor<2x3x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5xf32>, tensor<0xf32>, tensor<0xf32>)
  func.return %out, %a : tensor<2x3x5xf32>, tensor<0xf32>
}

// CHECK-LABEL: func.func @batch_norm
// CHECK-NEXT:    %rstd = ten.map(%rv) : tensor<3xf32> -> tensor<3xf32> {
// CHECK:           math.rsqrt
// CHECK:         %rm_b = ten.index_map %rm (d0, d1, d2) -> (d1) : tensor<3xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT:    %rstd_b = ten.index_map %rstd (d0, d1, d2) -> (d1) : tensor<3xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT:    %out = ten.map(%x, %rm_b, %rstd_b)
// CHECK:         %a = ten.constant dense<> : tensor<0xf32>
// CHECK:         func.return %out, %a
