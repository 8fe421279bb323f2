// RUN: deplo-opt %s -p lift-to-loop | filecheck %s

// ten.reduce: free loops over the kept axes, one reduce loop per reduced axis (nested in
// axis order; the innermost yields the element, the outer one the inner's result), and
// the store after them. The reduced extent-1 axis gets no loop.
func.func @forward(%x: tensor<3x1x5x7xf32>) -> tensor<5xf32> {
  %s = ten.reduce max %x dims [0, 1, 3] : tensor<3x1x5x7xf32> -> tensor<5xf32>
  func.return %s : tensor<5xf32>
}

// CHECK:      %s = loop.kernel @k_s ins(%x_b = %x : tensor<3x1x5x7xf32>) outs(%s_b : tensor<5xf32>) attributes {covers = ["s"]} {
// CHECK-NEXT:   loop.for %a0 = 0 to 5 {
// CHECK-NEXT:     %[[S:.*]] = loop.for %a1 = 0 to 3 reduce(max) -> f32 {
// CHECK-NEXT:       %[[T:.*]] = loop.for %a2 = 0 to 7 reduce(max) -> f32 {
// CHECK-NEXT:         %in = loop.load %x_b[%a1, 0, %a0, %a2] : memref<3x1x5x7xf32>
// CHECK-NEXT:         loop.yield %in : f32
// CHECK-NEXT:       }
// CHECK-NEXT:       loop.yield %[[T]] : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.store %[[S]], %s_b[%a0] : memref<5xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
