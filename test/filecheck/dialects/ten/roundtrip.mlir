// RUN: deplo-opt %s | filecheck %s
// RUN: deplo-opt %s | deplo-opt | filecheck %s

// Every ten op in its custom syntax, printed back as written.
func.func @ops(%x: tensor<2x4x64xf32>, %w: tensor<64xf32>) -> (tensor<2x4x64xf32>, tensor<2x4xf32>, tensor<4xf32>) {
  %w_b = ten.index_map %w (d0, d1, d2) -> (d2) : tensor<64xf32> -> tensor<2x4x64xf32>
  %y = ten.map(%x, %w_b) : tensor<2x4x64xf32>, tensor<2x4x64xf32> -> tensor<2x4x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.mulf %a, %b : f32
    %r = math.rsqrt %c : f32
    ten.yield %r : f32
  }
  %sum = ten.reduce add %y dims [2] : tensor<2x4x64xf32> -> tensor<2x4xf32>
  %max = ten.reduce max %x dims [0, 2] : tensor<2x4x64xf32> -> tensor<4xf32>
  %t = ten.index_map %x (d0, d1, d2) -> (d1, (d0 floordiv 2), (d2 mod 64)) : tensor<2x4x64xf32> -> tensor<4x2x64xf32>
  %k = ten.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
  %s = ten.constant dense<0.000000e+00> : tensor<f32>
  %i = ten.iota dim 1 : tensor<2x8xi64>
  %z = ten.map() : -> tensor<4xf32> {
    %zero = arith.constant 0.000000e+00 : f32
    ten.yield %zero : f32
  }
  func.return %y, %sum, %max : tensor<2x4x64xf32>, tensor<2x4xf32>, tensor<4xf32>
}

// CHECK:      func.func @ops(%x: tensor<2x4x64xf32>, %w: tensor<64xf32>) -> (tensor<2x4x64xf32>, tensor<2x4xf32>, tensor<4xf32>) {
// CHECK-NEXT:   %w_b = ten.index_map %w (d0, d1, d2) -> (d2) : tensor<64xf32> -> tensor<2x4x64xf32>
// CHECK-NEXT:   %y = ten.map(%x, %w_b) : tensor<2x4x64xf32>, tensor<2x4x64xf32> -> tensor<2x4x64xf32> {
// CHECK-NEXT:   ^bb0(%a: f32, %b: f32):
// CHECK-NEXT:     %c = arith.mulf %a, %b : f32
// CHECK-NEXT:     %r = math.rsqrt %c : f32
// CHECK-NEXT:     ten.yield %r : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %sum = ten.reduce add %y dims [2] : tensor<2x4x64xf32> -> tensor<2x4xf32>
// CHECK-NEXT:   %max = ten.reduce max %x dims [0, 2] : tensor<2x4x64xf32> -> tensor<4xf32>
// CHECK-NEXT:   %t = ten.index_map %x (d0, d1, d2) -> (d1, (d0 floordiv 2), (d2 mod 64)) : tensor<2x4x64xf32> -> tensor<4x2x64xf32>
// CHECK-NEXT:   %k = ten.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:   %s = ten.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:   %i = ten.iota dim 1 : tensor<2x8xi64>
// CHECK-NEXT:   %z = ten.map() : -> tensor<4xf32> {
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     ten.yield %zero : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %y, %sum, %max : tensor<2x4x64xf32>, tensor<2x4xf32>, tensor<4xf32>

// ten.gather: an embedding's row lookup, and a gather on a middle axis.
func.func @gather(%w: tensor<128x64xf32>, %ids: tensor<1x8xi64>, %x: tensor<3x5x2xf32>, %i: tensor<4xi32>) -> (tensor<1x8x64xf32>, tensor<3x4x2xf32>) {
  %e = ten.gather %w[%ids] axis 0 : tensor<128x64xf32>, tensor<1x8xi64> -> tensor<1x8x64xf32>
  %g = ten.gather %x[%i] axis 1 : tensor<3x5x2xf32>, tensor<4xi32> -> tensor<3x4x2xf32>
  func.return %e, %g : tensor<1x8x64xf32>, tensor<3x4x2xf32>
}

// CHECK:      func.func @gather(%w: tensor<128x64xf32>, %ids: tensor<1x8xi64>, %x: tensor<3x5x2xf32>, %i: tensor<4xi32>) -> (tensor<1x8x64xf32>, tensor<3x4x2xf32>) {
// CHECK-NEXT:   %e = ten.gather %w[%ids] axis 0 : tensor<128x64xf32>, tensor<1x8xi64> -> tensor<1x8x64xf32>
// CHECK-NEXT:   %g = ten.gather %x[%i] axis 1 : tensor<3x5x2xf32>, tensor<4xi32> -> tensor<3x4x2xf32>
// CHECK-NEXT:   func.return %e, %g : tensor<1x8x64xf32>, tensor<3x4x2xf32>
