// RUN: deplo-opt %s -p fuse | filecheck %s

// relu(matmul(x + bias, w)): the bias add (prologue) is substituted into the K reduce,
// the relu (epilogue) stays after it, the (M, K, N) product is never materialised, and
// the broadcasts fold into load indices. One kernel, reading only x, bias and w.

func.func @forward(%x: tensor<4x8xf32>, %bias: tensor<8xf32>, %w: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %bias_bc = loop.kernel @k_bias_bc ins(%bias_b = %bias : tensor<8xf32>) outs(%bias_bc_b : tensor<4x8xf32>) attributes {covers = ["bias_bc"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        %in = loop.load %bias_b[%a1] : memref<8xf32>
        loop.store %in, %bias_bc_b[%a0, %a1] : memref<4x8xf32>
      }
    }
  }
  %add = loop.kernel @k_add ins(%x_b = %x : tensor<4x8xf32>, %bias_bc_b = %bias_bc : tensor<4x8xf32>) outs(%add_b : tensor<4x8xf32>) attributes {covers = ["add"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        %a = loop.load %x_b[%a0, %a1] : memref<4x8xf32>
        %b = loop.load %bias_bc_b[%a0, %a1] : memref<4x8xf32>
        %s = arith.addf %a, %b : f32
        loop.store %s, %add_b[%a0, %a1] : memref<4x8xf32>
      }
    }
  }
  %add_bc = loop.kernel @k_add_bc ins(%add_b = %add : tensor<4x8xf32>) outs(%add_bc_b : tensor<4x8x4xf32>) attributes {covers = ["add_bc"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        loop.for %a2 = 0 to 4 {
          %in = loop.load %add_b[%a0, %a1] : memref<4x8xf32>
          loop.store %in, %add_bc_b[%a0, %a1, %a2] : memref<4x8x4xf32>
        }
      }
    }
  }
  %w_bc = loop.kernel @k_w_bc ins(%w_b = %w : tensor<8x4xf32>) outs(%w_bc_b : tensor<4x8x4xf32>) attributes {covers = ["w_bc"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        loop.for %a2 = 0 to 4 {
          %in = loop.load %w_b[%a1, %a2] : memref<8x4xf32>
          loop.store %in, %w_bc_b[%a0, %a1, %a2] : memref<4x8x4xf32>
        }
      }
    }
  }
  %prod = loop.kernel @k_prod ins(%add_bc_b = %add_bc : tensor<4x8x4xf32>, %w_bc_b = %w_bc : tensor<4x8x4xf32>) outs(%prod_b : tensor<4x8x4xf32>) attributes {covers = ["prod"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        loop.for %a2 = 0 to 4 {
          %a = loop.load %add_bc_b[%a0, %a1, %a2] : memref<4x8x4xf32>
          %b = loop.load %w_bc_b[%a0, %a1, %a2] : memref<4x8x4xf32>
          %p = arith.mulf %a, %b : f32
          loop.store %p, %prod_b[%a0, %a1, %a2] : memref<4x8x4xf32>
        }
      }
    }
  }
  %matmul = loop.kernel @k_matmul ins(%prod_b = %prod : tensor<4x8x4xf32>) outs(%matmul_b : tensor<4x4xf32>) attributes {covers = ["matmul"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 4 {
        %matmul_1 = loop.for %a2 = 0 to 8 reduce(add) -> f32 {
          %in = loop.load %prod_b[%a0, %a2, %a1] : memref<4x8x4xf32>
          loop.yield %in : f32
        }
        loop.store %matmul_1, %matmul_b[%a0, %a1] : memref<4x4xf32>
      }
    }
  }
  %relu = loop.kernel @k_relu ins(%matmul_b = %matmul : tensor<4x4xf32>) outs(%relu_b : tensor<4x4xf32>) attributes {covers = ["relu"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 4 {
        %a = loop.load %matmul_b[%a0, %a1] : memref<4x4xf32>
        %z = arith.constant 0.000000e+00 : f32
        %r = arith.maximumf %a, %z : f32
        loop.store %r, %relu_b[%a0, %a1] : memref<4x4xf32>
      }
    }
  }
  func.return %relu : tensor<4x4xf32>
}

// CHECK:      %relu = loop.kernel @k_relu ins(%x_b = %x : tensor<4x8xf32>, %bias_b = %bias : tensor<8xf32>, %w_b = %w : tensor<8x4xf32>) outs(%relu_b : tensor<4x4xf32>)
// CHECK-SAME:     covers = ["bias_bc", "add", "w_bc", "add_bc", "prod", "matmul", "relu"]
// CHECK-NEXT:   %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   loop.for %a0 = 0 to 4 {
// CHECK-NEXT:     loop.for %a1 = 0 to 4 {
// CHECK-NEXT:       %matmul = loop.for %a2 = 0 to 8 reduce(add) -> f32 {
// CHECK-NEXT:         %a = loop.load %x_b[%a0, %a2] : memref<4x8xf32>
// CHECK-NEXT:         %in = loop.load %bias_b[%a2] : memref<8xf32>
// CHECK-NEXT:         %s = arith.addf %a, %in : f32
// CHECK-NEXT:         %in_1 = loop.load %w_b[%a2, %a1] : memref<8x4xf32>
// CHECK-NEXT:         %p = arith.mulf %s, %in_1 : f32
// CHECK-NEXT:         loop.yield %p : f32
// CHECK-NEXT:       }
// CHECK-NEXT:       %r = arith.maximumf %matmul, %z : f32
// CHECK-NEXT:       loop.store %r, %relu_b[%a0, %a1] : memref<4x4xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: func.return %relu : tensor<4x4xf32>
