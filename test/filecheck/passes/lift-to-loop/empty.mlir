// RUN: deplo-opt %s -p lift-to-loop | filecheck %s

// A tensor of no elements is a kernel that does nothing: no inputs, no loops, no stores.
// A sum over an axis of extent 0 reads nothing either: a fill of the identity.
func.func @forward(%x: tensor<0x5xf32>) -> (tensor<0x5xf32>, tensor<5xf32>, tensor<5xf32>) {
  %y = ten.map(%x) : tensor<0x5xf32> -> tensor<0x5xf32> {
  ^bb0(%a: f32):
    %s = arith.mulf %a, %a : f32
    ten.yield %s : f32
  }
  %sum = ten.reduce add %x dims [0] : tensor<0x5xf32> -> tensor<5xf32>
  %prod = ten.reduce mul %y dims [0] : tensor<0x5xf32> -> tensor<5xf32>
  func.return %y, %sum, %prod : tensor<0x5xf32>, tensor<5xf32>, tensor<5xf32>
}

// CHECK:      %y = loop.kernel @k_y ins() outs(%y_b : tensor<0x5xf32>) attributes {covers = ["y"]} {
// CHECK-NEXT: ^bb0(%y_b: memref<0x5xf32>):
// CHECK-NEXT: }
// CHECK-NEXT: %sum = loop.kernel @k_sum ins() outs(%sum_b : tensor<5xf32>) attributes {covers = ["sum"]} {
// CHECK-NEXT:   %c = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   loop.for %a0 = 0 to 5 {
// CHECK-NEXT:     loop.store %c, %sum_b[%a0] : memref<5xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: %prod = loop.kernel @k_prod ins() outs(%prod_b : tensor<5xf32>) attributes {covers = ["prod"]} {
// CHECK-NEXT:   %c = arith.constant 1.000000e+00 : f32
