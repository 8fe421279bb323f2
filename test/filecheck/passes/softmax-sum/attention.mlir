// RUN: deplo-opt %s -p softmax-sum --split-input-file | filecheck %s
// RUN: deplo-opt %s -p 'softmax-sum{fold=false}' --split-input-file | filecheck %s --check-prefix=OFF

// softmax(q @ k^T) @ v as decompose writes it (the max, exp, sum and division, then the
// probabilities broadcast over the value columns, multiplied and summed over the keys):
// one ten.softmax_sum of the scores and the values' view, the softmax's ops gone.

func.func @forward(%x: tensor<2x5x4xf32>, %x1: tensor<2x7x4xf32>, %x2: tensor<2x7x3xf32>) -> tensor<2x5x3xf32> {
  %x_b = ten.index_map %x (d0, d1, d2, d3) -> (d0, d1, d2) : tensor<2x5x4xf32> -> tensor<2x5x4x7xf32>
  %x1_b = ten.index_map %x1 (d0, d1, d2, d3) -> (d0, d3, d2) : tensor<2x7x4xf32> -> tensor<2x5x4x7xf32>
  %prod = ten.map(%x_b, %x1_b) : tensor<2x5x4x7xf32>, tensor<2x5x4x7xf32> -> tensor<2x5x4x7xf32> {
  ^bb0(%0: f32, %1: f32):
    %2 = arith.mulf %0, %1 : f32
    ten.yield %2 : f32
  }
  %matmul = ten.reduce add %prod dims [2] : tensor<2x5x4x7xf32> -> tensor<2x5x7xf32>
  %max = ten.reduce max %matmul dims [2] : tensor<2x5x7xf32> -> tensor<2x5xf32>
  %max_b = ten.index_map %max (d0, d1, d2) -> (d0, d1) : tensor<2x5xf32> -> tensor<2x5x7xf32>
  %exp = ten.map(%matmul, %max_b) : tensor<2x5x7xf32>, tensor<2x5x7xf32> -> tensor<2x5x7xf32> {
  ^bb0(%3: f32, %4: f32):
    %5 = arith.subf %3, %4 : f32
    %6 = math.exp %5 : f32
    ten.yield %6 : f32
  }
  %sum = ten.reduce add %exp dims [2] : tensor<2x5x7xf32> -> tensor<2x5xf32>
  %sum_b = ten.index_map %sum (d0, d1, d2) -> (d0, d1) : tensor<2x5xf32> -> tensor<2x5x7xf32>
  %softmax = ten.map(%exp, %sum_b) : tensor<2x5x7xf32>, tensor<2x5x7xf32> -> tensor<2x5x7xf32> {
  ^bb0(%7: f32, %8: f32):
    %9 = arith.divf %7, %8 : f32
    ten.yield %9 : f32
  }
  %softmax_b = ten.index_map %softmax (d0, d1, d2, d3) -> (d0, d1, d2) : tensor<2x5x7xf32> -> tensor<2x5x7x3xf32>
  %x2_b = ten.index_map %x2 (d0, d1, d2, d3) -> (d0, d2, d3) : tensor<2x7x3xf32> -> tensor<2x5x7x3xf32>
  %prod_1 = ten.map(%softmax_b, %x2_b) : tensor<2x5x7x3xf32>, tensor<2x5x7x3xf32> -> tensor<2x5x7x3xf32> {
  ^bb0(%10: f32, %11: f32):
    %12 = arith.mulf %10, %11 : f32
    ten.yield %12 : f32
  }
  %matmul_1 = ten.reduce add %prod_1 dims [2] : tensor<2x5x7x3xf32> -> tensor<2x5x3xf32>
  func.return %matmul_1 : tensor<2x5x3xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:         %matmul = ten.reduce add %prod dims [2] : tensor<2x5x4x7xf32> -> tensor<2x5x7xf32>
// CHECK-NOT:     ten.reduce max
// CHECK:         %x2_b = ten.index_map %x2
// CHECK-NEXT:    %matmul_1 = ten.softmax_sum %matmul, %x2_b dim 2 : tensor<2x5x7xf32>, tensor<2x5x7x3xf32> -> tensor<2x5x3xf32>
// CHECK-NEXT:    func.return %matmul_1 : tensor<2x5x3xf32>

// fold=false leaves the softmax and the product.
// OFF-LABEL: func.func @forward
// OFF:         %max = ten.reduce max %matmul dims [2]
// OFF:         %matmul_1 = ten.reduce add %prod_1 dims [2]

// -----

// The probabilities are also returned: they must exist, so nothing is folded.

func.func @returned(%s: tensor<4x6xf32>, %v: tensor<4x6x2xf32>) -> (tensor<4x6xf32>, tensor<4x2xf32>) {
  %max = ten.reduce max %s dims [1] : tensor<4x6xf32> -> tensor<4xf32>
  %max_b = ten.index_map %max (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x6xf32>
  %exp = ten.map(%s, %max_b) : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32> {
  ^bb0(%0: f32, %1: f32):
    %2 = arith.subf %0, %1 : f32
    %3 = math.exp %2 : f32
    ten.yield %3 : f32
  }
  %sum = ten.reduce add %exp dims [1] : tensor<4x6xf32> -> tensor<4xf32>
  %sum_b = ten.index_map %sum (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x6xf32>
  %p = ten.map(%exp, %sum_b) : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32> {
  ^bb0(%4: f32, %5: f32):
    %6 = arith.divf %4, %5 : f32
    ten.yield %6 : f32
  }
  %p_b = ten.index_map %p (d0, d1, d2) -> (d0, d1) : tensor<4x6xf32> -> tensor<4x6x2xf32>
  %prod = ten.map(%p_b, %v) : tensor<4x6x2xf32>, tensor<4x6x2xf32> -> tensor<4x6x2xf32> {
  ^bb0(%7: f32, %8: f32):
    %9 = arith.mulf %7, %8 : f32
    ten.yield %9 : f32
  }
  %o = ten.reduce add %prod dims [1] : tensor<4x6x2xf32> -> tensor<4x2xf32>
  func.return %p, %o : tensor<4x6xf32>, tensor<4x2xf32>
}

// CHECK-LABEL: func.func @returned
// CHECK:         %max = ten.reduce max %s dims [1]
// CHECK:         %o = ten.reduce add %prod dims [1]
// CHECK-NOT:     ten.softmax_sum
