// RUN: deplo-opt %s -p fuse | filecheck %s

// RMSNorm: a row reduction broadcast back over the row, and a weight broadcast over
// rows. After substitution the sum of squares and the rsqrt depend on the row only, so
// hoisting puts them once per row, before the normalising loop; constants go to the top.

func.func @forward(%x: tensor<1x4x16xf32>, %w: tensor<16xf32>) -> tensor<1x4x16xf32> {
  %sq = loop.kernel @k_sq ins(%x_b = %x : tensor<1x4x16xf32>) outs(%sq_b : tensor<1x4x16xf32>) attributes {covers = ["sq"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 16 {
        %a = loop.load %x_b[0, %a0, %a1] : memref<1x4x16xf32>
        %m = arith.mulf %a, %a : f32
        loop.store %m, %sq_b[0, %a0, %a1] : memref<1x4x16xf32>
      }
    }
  }
  %ss = loop.kernel @k_ss ins(%sq_b = %sq : tensor<1x4x16xf32>) outs(%ss_b : tensor<1x4xf32>) attributes {covers = ["ss"]} {
    loop.for %a0 = 0 to 4 {
      %ss_1 = loop.for %a1 = 0 to 16 reduce(add) -> f32 {
        %in = loop.load %sq_b[0, %a0, %a1] : memref<1x4x16xf32>
        loop.yield %in : f32
      }
      loop.store %ss_1, %ss_b[0, %a0] : memref<1x4xf32>
    }
  }
  %r = loop.kernel @k_r ins(%ss_b = %ss : tensor<1x4xf32>) outs(%r_b : tensor<1x4xf32>) attributes {covers = ["r"]} {
    loop.for %a0 = 0 to 4 {
      %a = loop.load %ss_b[0, %a0] : memref<1x4xf32>
      %inv = arith.constant 6.250000e-02 : f32
      %eps = arith.constant 1.000000e-06 : f32
      %m = arith.mulf %a, %inv : f32
      %e = arith.addf %m, %eps : f32
      %q = math.rsqrt %e : f32
      loop.store %q, %r_b[0, %a0] : memref<1x4xf32>
    }
  }
  %rb = loop.kernel @k_rb ins(%r_b = %r : tensor<1x4xf32>) outs(%rb_b : tensor<1x4x16xf32>) attributes {covers = ["rb"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 16 {
        %in = loop.load %r_b[0, %a0] : memref<1x4xf32>
        loop.store %in, %rb_b[0, %a0, %a1] : memref<1x4x16xf32>
      }
    }
  }
  %wb = loop.kernel @k_wb ins(%w_b = %w : tensor<16xf32>) outs(%wb_b : tensor<1x4x16xf32>) attributes {covers = ["wb"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 16 {
        %in = loop.load %w_b[%a1] : memref<16xf32>
        loop.store %in, %wb_b[0, %a0, %a1] : memref<1x4x16xf32>
      }
    }
  }
  %y = loop.kernel @k_y ins(%x_b = %x : tensor<1x4x16xf32>, %rb_b = %rb : tensor<1x4x16xf32>, %wb_b = %wb : tensor<1x4x16xf32>) outs(%y_b : tensor<1x4x16xf32>) attributes {covers = ["y"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 16 {
        %a = loop.load %x_b[0, %a0, %a1] : memref<1x4x16xf32>
        %b = loop.load %rb_b[0, %a0, %a1] : memref<1x4x16xf32>
        %c = loop.load %wb_b[0, %a0, %a1] : memref<1x4x16xf32>
        %m = arith.mulf %a, %b : f32
        %n = arith.mulf %m, %c : f32
        loop.store %n, %y_b[0, %a0, %a1] : memref<1x4x16xf32>
      }
    }
  }
  func.return %y : tensor<1x4x16xf32>
}

// CHECK:      %y = loop.kernel @k_y ins(%x_b = %x : tensor<1x4x16xf32>, %w_b = %w : tensor<16xf32>) outs(%y_b : tensor<1x4x16xf32>)
// CHECK-NEXT:   %inv = arith.constant 6.250000e-02 : f32
// CHECK-NEXT:   %eps = arith.constant 1.000000e-06 : f32
// CHECK-NEXT:   loop.for %a0 = 0 to 4 {
// CHECK-NEXT:     %ss = loop.for %a1 = 0 to 16 reduce(add) -> f32 {
// CHECK-NEXT:       %a = loop.load %x_b[0, %a0, %a1] : memref<1x4x16xf32>
// CHECK-NEXT:       %m = arith.mulf %a, %a : f32
// CHECK-NEXT:       loop.yield %m : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     %m_1 = arith.mulf %ss, %inv : f32
// CHECK-NEXT:     %e = arith.addf %m_1, %eps : f32
// CHECK-NEXT:     %q = math.rsqrt %e : f32
// CHECK-NEXT:     loop.for %a2 = 0 to 16 {
// CHECK-NEXT:       %a_1 = loop.load %x_b[0, %a0, %a2] : memref<1x4x16xf32>
// CHECK-NEXT:       %in = loop.load %w_b[%a2] : memref<16xf32>
// CHECK-NEXT:       %m_2 = arith.mulf %a_1, %q : f32
// CHECK-NEXT:       %n = arith.mulf %m_2, %in : f32
// CHECK-NEXT:       loop.store %n, %y_b[0, %a0, %a2] : memref<1x4x16xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: func.return %y : tensor<1x4x16xf32>
