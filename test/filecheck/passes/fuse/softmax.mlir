// RUN: deplo-opt %s -p fuse | filecheck %s

// A reduction chain: max, exp(x - max), sum, divide. The max reduce is substituted twice
// (into the exp-sum reduce and into the normalising loop); both copies hoist to the row
// and merge into one. Row loop; max reduce; exp-sum reduce; normalise loop.

func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %mx = loop.kernel @k_mx ins(%x_b = %x : tensor<4x16xf32>) outs(%mx_b : tensor<4xf32>) attributes {covers = ["mx"]} {
    loop.for %a0 = 0 to 4 {
      %mx_1 = loop.for %a1 = 0 to 16 reduce(max) -> f32 {
        %in = loop.load %x_b[%a0, %a1] : memref<4x16xf32>
        loop.yield %in : f32
      }
      loop.store %mx_1, %mx_b[%a0] : memref<4xf32>
    }
  }
  %mxb = loop.kernel @k_mxb ins(%mx_b = %mx : tensor<4xf32>) outs(%mxb_b : tensor<4x16xf32>) attributes {covers = ["mxb"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 16 {
        %in = loop.load %mx_b[%a0] : memref<4xf32>
        loop.store %in, %mxb_b[%a0, %a1] : memref<4x16xf32>
      }
    }
  }
  %ex = loop.kernel @k_ex ins(%x_b = %x : tensor<4x16xf32>, %mxb_b = %mxb : tensor<4x16xf32>) outs(%ex_b : tensor<4x16xf32>) attributes {covers = ["ex"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 16 {
        %a = loop.load %x_b[%a0, %a1] : memref<4x16xf32>
        %b = loop.load %mxb_b[%a0, %a1] : memref<4x16xf32>
        %s = arith.subf %a, %b : f32
        %e = math.exp %s : f32
        loop.store %e, %ex_b[%a0, %a1] : memref<4x16xf32>
      }
    }
  }
  %sum = loop.kernel @k_sum ins(%ex_b = %ex : tensor<4x16xf32>) outs(%sum_b : tensor<4xf32>) attributes {covers = ["sum"]} {
    loop.for %a0 = 0 to 4 {
      %sum_1 = loop.for %a1 = 0 to 16 reduce(add) -> f32 {
        %in = loop.load %ex_b[%a0, %a1] : memref<4x16xf32>
        loop.yield %in : f32
      }
      loop.store %sum_1, %sum_b[%a0] : memref<4xf32>
    }
  }
  %sumb = loop.kernel @k_sumb ins(%sum_b = %sum : tensor<4xf32>) outs(%sumb_b : tensor<4x16xf32>) attributes {covers = ["sumb"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 16 {
        %in = loop.load %sum_b[%a0] : memref<4xf32>
        loop.store %in, %sumb_b[%a0, %a1] : memref<4x16xf32>
      }
    }
  }
  %softmax = loop.kernel @k_softmax ins(%ex_b = %ex : tensor<4x16xf32>, %sumb_b = %sumb : tensor<4x16xf32>) outs(%softmax_b : tensor<4x16xf32>) attributes {covers = ["softmax"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 16 {
        %a = loop.load %ex_b[%a0, %a1] : memref<4x16xf32>
        %b = loop.load %sumb_b[%a0, %a1] : memref<4x16xf32>
        %d = arith.divf %a, %b : f32
        loop.store %d, %softmax_b[%a0, %a1] : memref<4x16xf32>
      }
    }
  }
  func.return %softmax : tensor<4x16xf32>
}

// CHECK:      %softmax = loop.kernel @k_softmax ins(%x_b = %x : tensor<4x16xf32>) outs(%softmax_b : tensor<4x16xf32>)
// CHECK-NEXT:   loop.for %a0 = 0 to 4 {
// CHECK-NEXT:     %mx = loop.for %a1 = 0 to 16 reduce(max) -> f32 {
// CHECK-NEXT:       %in = loop.load %x_b[%a0, %a1] : memref<4x16xf32>
// CHECK-NEXT:       loop.yield %in : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     %sum = loop.for %a2 = 0 to 16 reduce(add) -> f32 {
// CHECK-NEXT:       %a = loop.load %x_b[%a0, %a2] : memref<4x16xf32>
// CHECK-NEXT:       %s = arith.subf %a, %mx : f32
// CHECK-NEXT:       %e = math.exp %s : f32
// CHECK-NEXT:       loop.yield %e : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.for %a3 = 0 to 16 {
// CHECK-NEXT:       %a_1 = loop.load %x_b[%a0, %a3] : memref<4x16xf32>
// CHECK-NEXT:       %s_1 = arith.subf %a_1, %mx : f32
// CHECK-NEXT:       %e_1 = math.exp %s_1 : f32
// CHECK-NEXT:       %d = arith.divf %e_1, %sum : f32
// CHECK-NEXT:       loop.store %d, %softmax_b[%a0, %a3] : memref<4x16xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: func.return %softmax : tensor<4x16xf32>
// CHECK-NOT:  loop.kernel
