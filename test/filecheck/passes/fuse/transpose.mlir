// RUN: deplo-opt %s -p fuse | filecheck %s

// exp(x) viewed transposed: the transpose composes into the index of the x load.

func.func @forward(%x: tensor<4x8xf32>, %z: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = loop.kernel @k_e ins(%x_b = %x : tensor<4x8xf32>) outs(%e_b : tensor<4x8xf32>) attributes {covers = ["e"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        %a = loop.load %x_b[%a0, %a1] : memref<4x8xf32>
        %v = math.exp %a : f32
        loop.store %v, %e_b[%a0, %a1] : memref<4x8xf32>
      }
    }
  }
  %t = loop.kernel @k_t ins(%e_b = %e : tensor<4x8xf32>) outs(%t_b : tensor<8x4xf32>) attributes {covers = ["t"]} {
    loop.for %a0 = 0 to 8 {
      loop.for %a1 = 0 to 4 {
        %in = loop.load %e_b[%a1, %a0] : memref<4x8xf32>
        loop.store %in, %t_b[%a0, %a1] : memref<8x4xf32>
      }
    }
  }
  %y = loop.kernel @k_y ins(%t_b = %t : tensor<8x4xf32>, %z_b = %z : tensor<8x4xf32>) outs(%y_b : tensor<8x4xf32>) attributes {covers = ["y"]} {
    loop.for %a0 = 0 to 8 {
      loop.for %a1 = 0 to 4 {
        %a = loop.load %t_b[%a0, %a1] : memref<8x4xf32>
        %b = loop.load %z_b[%a0, %a1] : memref<8x4xf32>
        %m = arith.mulf %a, %b : f32
        loop.store %m, %y_b[%a0, %a1] : memref<8x4xf32>
      }
    }
  }
  func.return %y : tensor<8x4xf32>
}

// CHECK:      %y = loop.kernel @k_y ins(%x_b = %x : tensor<4x8xf32>, %z_b = %z : tensor<8x4xf32>) outs(%y_b : tensor<8x4xf32>)
// CHECK-NEXT:   loop.for %a0 = 0 to 8 {
// CHECK-NEXT:     loop.for %a1 = 0 to 4 {
// CHECK-NEXT:       %a = loop.load %x_b[%a1, %a0] : memref<4x8xf32>
// CHECK-NEXT:       %v = math.exp %a : f32
// CHECK-NEXT:       %b = loop.load %z_b[%a0, %a1] : memref<8x4xf32>
// CHECK-NEXT:       %m = arith.mulf %v, %b : f32
// CHECK-NEXT:       loop.store %m, %y_b[%a0, %a1] : memref<8x4xf32>
