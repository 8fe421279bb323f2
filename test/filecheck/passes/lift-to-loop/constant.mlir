// RUN: deplo-opt %s -p lift-to-loop | filecheck %s

// A splat constant becomes a fill kernel (fuse later folds it into its consumers as a
// scalar); any other literal stays a graph-level tensor, an input of its consumers.
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = ten.constant dense<2.0> : tensor<4xf32>
  %k = ten.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y = ten.map(%x, %two, %k) : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.mulf %a, %b : f32
    %t = arith.addf %s, %c : f32
    ten.yield %t : f32
  }
  func.return %y : tensor<4xf32>
}

// CHECK:      %two = loop.kernel @k_two ins() outs(%two_b : tensor<4xf32>) attributes {covers = ["two"]} {
// CHECK-NEXT:   %c = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:   loop.for %a0 = 0 to 4 {
// CHECK-NEXT:     loop.store %c, %two_b[%a0] : memref<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: %k = ten.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT: %y = loop.kernel @k_y ins(%x_b = %x : tensor<4xf32>, %two_b = %two : tensor<4xf32>, %k_b = %k : tensor<4xf32>)
