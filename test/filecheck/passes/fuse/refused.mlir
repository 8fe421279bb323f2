// RUN: deplo-opt %s -p fuse | filecheck %s
// RUN: deplo-opt %s -p 'fuse{max-reduce-recompute=8.0 matmul-alone=false nest-reductions=true}' | filecheck %s --check-prefix=LOOSE
// RUN: deplo-opt %s -p 'fuse{max-reduce-recompute=8.0}' | filecheck %s --check-prefix=ALONE
// RUN: deplo-opt %s -p 'fuse{matmul-alone=false}' | filecheck %s --check-prefix=REDUCE

// The guard refuses substitutions that would re-run a producer's reduction per consumer
// element; the kernels stay apart and the consumer records why.
//
// column_sum: the column sums would be re-reduced for every row.
// matmul_transposed: a matmul beside another reduction, refused before substituting;
// with that refusal off (REDUCE), the first matmul's K reduce would sit inside the
// second's, once per output column. The materialised tensor is the (4, 6) matmul result, and the
// transpose folds into the second matmul's load index.

func.func @column_sum(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %cs = loop.kernel @k_cs ins(%x_b = %x : tensor<4x8xf32>) outs(%cs_b : tensor<8xf32>) attributes {covers = ["cs"]} {
    loop.for %a0 = 0 to 8 {
      %cs_1 = loop.for %a1 = 0 to 4 reduce(add) -> f32 {
        %in = loop.load %x_b[%a1, %a0] : memref<4x8xf32>
        loop.yield %in : f32
      }
      loop.store %cs_1, %cs_b[%a0] : memref<8xf32>
    }
  }
  %csb = loop.kernel @k_csb ins(%cs_b = %cs : tensor<8xf32>) outs(%csb_b : tensor<4x8xf32>) attributes {covers = ["csb"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        %in = loop.load %cs_b[%a1] : memref<8xf32>
        loop.store %in, %csb_b[%a0, %a1] : memref<4x8xf32>
      }
    }
  }
  %y = loop.kernel @k_y ins(%x_b = %x : tensor<4x8xf32>, %csb_b = %csb : tensor<4x8xf32>) outs(%y_b : tensor<4x8xf32>) attributes {covers = ["y"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        %a = loop.load %x_b[%a0, %a1] : memref<4x8xf32>
        %b = loop.load %csb_b[%a0, %a1] : memref<4x8xf32>
        %s = arith.subf %a, %b : f32
        loop.store %s, %y_b[%a0, %a1] : memref<4x8xf32>
      }
    }
  }
  func.return %y : tensor<4x8xf32>
}
func.func @matmul_transposed(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %w: tensor<4x2xf32>) -> tensor<6x2xf32> {
  %a_bc = loop.kernel @k_a_bc ins(%a_b = %a : tensor<4x8xf32>) outs(%a_bc_b : tensor<4x8x6xf32>) attributes {covers = ["a_bc"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        loop.for %a2 = 0 to 6 {
          %in = loop.load %a_b[%a0, %a1] : memref<4x8xf32>
          loop.store %in, %a_bc_b[%a0, %a1, %a2] : memref<4x8x6xf32>
        }
      }
    }
  }
  %b_bc = loop.kernel @k_b_bc ins(%b_b = %b : tensor<8x6xf32>) outs(%b_bc_b : tensor<4x8x6xf32>) attributes {covers = ["b_bc"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        loop.for %a2 = 0 to 6 {
          %in = loop.load %b_b[%a1, %a2] : memref<8x6xf32>
          loop.store %in, %b_bc_b[%a0, %a1, %a2] : memref<4x8x6xf32>
        }
      }
    }
  }
  %p1 = loop.kernel @k_p1 ins(%a_bc_b = %a_bc : tensor<4x8x6xf32>, %b_bc_b = %b_bc : tensor<4x8x6xf32>) outs(%p1_b : tensor<4x8x6xf32>) attributes {covers = ["p1"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        loop.for %a2 = 0 to 6 {
          %x = loop.load %a_bc_b[%a0, %a1, %a2] : memref<4x8x6xf32>
          %y = loop.load %b_bc_b[%a0, %a1, %a2] : memref<4x8x6xf32>
          %m = arith.mulf %x, %y : f32
          loop.store %m, %p1_b[%a0, %a1, %a2] : memref<4x8x6xf32>
        }
      }
    }
  }
  %mm1 = loop.kernel @k_mm1 ins(%p1_b = %p1 : tensor<4x8x6xf32>) outs(%mm1_b : tensor<4x6xf32>) attributes {covers = ["mm1"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 6 {
        %mm1_1 = loop.for %a2 = 0 to 8 reduce(add) -> f32 {
          %in = loop.load %p1_b[%a0, %a2, %a1] : memref<4x8x6xf32>
          loop.yield %in : f32
        }
        loop.store %mm1_1, %mm1_b[%a0, %a1] : memref<4x6xf32>
      }
    }
  }
  %t = loop.kernel @k_t ins(%mm1_b = %mm1 : tensor<4x6xf32>) outs(%t_b : tensor<6x4xf32>) attributes {covers = ["t"]} {
    loop.for %a0 = 0 to 6 {
      loop.for %a1 = 0 to 4 {
        %in = loop.load %mm1_b[%a1, %a0] : memref<4x6xf32>
        loop.store %in, %t_b[%a0, %a1] : memref<6x4xf32>
      }
    }
  }
  %t_bc = loop.kernel @k_t_bc ins(%t_b = %t : tensor<6x4xf32>) outs(%t_bc_b : tensor<6x4x2xf32>) attributes {covers = ["t_bc"]} {
    loop.for %a0 = 0 to 6 {
      loop.for %a1 = 0 to 4 {
        loop.for %a2 = 0 to 2 {
          %in = loop.load %t_b[%a0, %a1] : memref<6x4xf32>
          loop.store %in, %t_bc_b[%a0, %a1, %a2] : memref<6x4x2xf32>
        }
      }
    }
  }
  %w_bc = loop.kernel @k_w_bc ins(%w_b = %w : tensor<4x2xf32>) outs(%w_bc_b : tensor<6x4x2xf32>) attributes {covers = ["w_bc"]} {
    loop.for %a0 = 0 to 6 {
      loop.for %a1 = 0 to 4 {
        loop.for %a2 = 0 to 2 {
          %in = loop.load %w_b[%a1, %a2] : memref<4x2xf32>
          loop.store %in, %w_bc_b[%a0, %a1, %a2] : memref<6x4x2xf32>
        }
      }
    }
  }
  %p2 = loop.kernel @k_p2 ins(%t_bc_b = %t_bc : tensor<6x4x2xf32>, %w_bc_b = %w_bc : tensor<6x4x2xf32>) outs(%p2_b : tensor<6x4x2xf32>) attributes {covers = ["p2"]} {
    loop.for %a0 = 0 to 6 {
      loop.for %a1 = 0 to 4 {
        loop.for %a2 = 0 to 2 {
          %x = loop.load %t_bc_b[%a0, %a1, %a2] : memref<6x4x2xf32>
          %y = loop.load %w_bc_b[%a0, %a1, %a2] : memref<6x4x2xf32>
          %m = arith.mulf %x, %y : f32
          loop.store %m, %p2_b[%a0, %a1, %a2] : memref<6x4x2xf32>
        }
      }
    }
  }
  %mm2 = loop.kernel @k_mm2 ins(%p2_b = %p2 : tensor<6x4x2xf32>) outs(%mm2_b : tensor<6x2xf32>) attributes {covers = ["mm2"]} {
    loop.for %a0 = 0 to 6 {
      loop.for %a1 = 0 to 2 {
        %mm2_1 = loop.for %a2 = 0 to 4 reduce(add) -> f32 {
          %in = loop.load %p2_b[%a0, %a2, %a1] : memref<6x4x2xf32>
          loop.yield %in : f32
        }
        loop.store %mm2_1, %mm2_b[%a0, %a1] : memref<6x2xf32>
      }
    }
  }
  func.return %mm2 : tensor<6x2xf32>
}

// CHECK-LABEL: func.func @column_sum
// CHECK:         %cs = loop.kernel @k_cs ins(%x_b = %x : tensor<4x8xf32>) outs(%cs_b : tensor<8xf32>)
// CHECK:         %y = loop.kernel @k_y ins(%x_b = %x : tensor<4x8xf32>, %cs_b = %cs : tensor<8xf32>) outs(%y_b : tensor<4x8xf32>)
// CHECK-SAME:      fusion.refused = ["@k_cs not fused: its reductions would run 4x as often (limit 1x)"]
// CHECK:             %in = loop.load %cs_b[%a1] : memref<8xf32>

// CHECK-LABEL: func.func @matmul_transposed
// CHECK:         %mm1 = loop.kernel @k_mm1 ins(%a_b = %a : tensor<4x8xf32>, %b_b = %b : tensor<8x6xf32>) outs(%mm1_b : tensor<4x6xf32>)
// CHECK:         %mm2 = loop.kernel @k_mm2 ins(%mm1_b = %mm1 : tensor<4x6xf32>, %w_b = %w : tensor<4x2xf32>) outs(%mm2_b : tensor<6x2xf32>)
// CHECK-SAME:      fusion.refused = ["@k_mm1 not fused: a matmul and another reduction in one kernel
// CHECK:             %in = loop.load %mm1_b[%a2, %a0] : memref<4x6xf32>
// CHECK-NOT:     loop.kernel

// With the bounds raised (pass options), both substitute: the column sum is re-reduced
// per row, and the first matmul's reduce runs inside the second's.

// With only the reduction bound raised, matmul_alone still keeps the two matmuls apart.
// ALONE-LABEL: func.func @matmul_transposed
// ALONE:         %mm2 = loop.kernel @k_mm2
// ALONE-SAME:      fusion.refused = ["@k_mm1 not fused: a matmul and another reduction in one kernel

// LOOSE-LABEL: func.func @column_sum
// LOOSE-NEXT:    %y = loop.kernel @k_y ins(%x_b = %x : tensor<4x8xf32>) outs(%y_b : tensor<4x8xf32>)
// LOOSE:           loop.for %a1 = 0 to 8 {
// LOOSE:             %cs = loop.for %a2 = 0 to 4 reduce(add) -> f32 {
// LOOSE-LABEL: func.func @matmul_transposed
// LOOSE-NEXT:    %mm2 = loop.kernel @k_mm2
// LOOSE:             %mm2_1 = loop.for %a2 = 0 to 4 reduce(add) -> f32 {
// LOOSE-NEXT:          %mm1 = loop.for %a3 = 0 to 8 reduce(add) -> f32 {

// REDUCE-LABEL: func.func @matmul_transposed
// REDUCE:         %mm2 = loop.kernel @k_mm2 ins(%mm1_b = %mm1 : tensor<4x6xf32>, %w_b = %w : tensor<4x2xf32>) outs(%mm2_b : tensor<6x2xf32>)
// REDUCE-SAME:      fusion.refused = ["@k_mm1 not fused: its reductions would run 2x as often (limit 1x)"]
