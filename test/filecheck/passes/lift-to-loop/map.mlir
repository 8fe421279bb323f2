// RUN: deplo-opt %s -p lift-to-loop | filecheck %s

// ten.map: free loops over the result, one load per distinct operand, the body inline,
// one store. The extent-1 axis gets no loop (index 0); an operand used twice loads once.
func.func @forward(%x: tensor<1x4x8xf32>, %y: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %z = ten.map(%x, %y, %x) : tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x4x8xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.mulf %s, %c : f32
    ten.yield %t : f32
  }
  func.return %z : tensor<1x4x8xf32>
}

// CHECK:      %z = loop.kernel @k_z ins(%x_b = %x : tensor<1x4x8xf32>, %y_b = %y : tensor<1x4x8xf32>) outs(%z_b : tensor<1x4x8xf32>) attributes {covers = ["z"]} {
// CHECK-NEXT:   loop.for %a0 = 0 to 4 {
// CHECK-NEXT:     loop.for %a1 = 0 to 8 {
// CHECK-NEXT:       %a = loop.load %x_b[0, %a0, %a1] : memref<1x4x8xf32>
// CHECK-NEXT:       %b = loop.load %y_b[0, %a0, %a1] : memref<1x4x8xf32>
// CHECK-NEXT:       %s = arith.addf %a, %b : f32
// CHECK-NEXT:       %t = arith.mulf %s, %a : f32
// CHECK-NEXT:       loop.store %t, %z_b[0, %a0, %a1] : memref<1x4x8xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: func.return %z : tensor<1x4x8xf32>
