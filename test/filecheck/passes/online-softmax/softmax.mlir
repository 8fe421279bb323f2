// RUN: deplo-opt %s -p 'online-softmax{min_row=0}' --split-input-file | filecheck %s
// RUN: deplo-opt %s -p online-softmax --split-input-file | filecheck %s --check-prefix=SHORT

// Softmax over rows of 5003 (fuse's output): the max loop and the exp-sum loop, which
// reads the row again, become one loop of the online group; the normalising loop keeps
// reading the group's maximum and sum.

func.func @softmax(%x: tensor<9x5003xf32>) -> tensor<9x5003xf32> {
  %softmax = loop.kernel @k_softmax ins(%x_b = %x : tensor<9x5003xf32>) outs(%softmax_b : tensor<9x5003xf32>) {
    loop.for %a0 = 0 to 9 {
      %max = loop.for %a1 = 0 to 5003 reduce(max) -> f32 {
        %in = loop.load %x_b[%a0, %a1] : memref<9x5003xf32>
        loop.yield %in : f32
      }
      %sum = loop.for %a2 = 0 to 5003 reduce(add) -> f32 {
        %in_1 = loop.load %x_b[%a0, %a2] : memref<9x5003xf32>
        %0 = arith.subf %in_1, %max : f32
        %in_2 = math.exp %0 : f32
        loop.yield %in_2 : f32
      }
      loop.for %a3 = 0 to 5003 {
        %in_3 = loop.load %x_b[%a0, %a3] : memref<9x5003xf32>
        %1 = arith.subf %in_3, %max : f32
        %in_4 = math.exp %1 : f32
        %2 = arith.divf %in_4, %sum : f32
        loop.store %2, %softmax_b[%a0, %a3] : memref<9x5003xf32>
      }
    }
  }
  func.return %softmax : tensor<9x5003xf32>
}

// Rows of 5003 are short by default (online_pays: a group of threads keeps them in
// registers between the loops): left two loops.
// SHORT-LABEL: func.func @softmax
// SHORT:         %max = loop.for %a1 = 0 to 5003 reduce(max) -> f32 {
// SHORT:         %sum = loop.for %a2 = 0 to 5003 reduce(add) -> f32 {

// CHECK-LABEL: func.func @softmax
// CHECK:         loop.for %a0 = 0 to 9 {
// CHECK-NEXT:      %max, %sum = loop.for %a1 = 0 to 5003 reduce(online_max, online_sum) -> (f32, f32) {
// CHECK-NEXT:        %in = loop.load %x_b[%a0, %a1] : memref<9x5003xf32>
// CHECK-NEXT:        %one = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:        loop.yield %in, %one : f32, f32
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.for %a3 = 0 to 5003 {
// CHECK-NEXT:        %in_1 = loop.load %x_b[%a0, %a3] : memref<9x5003xf32>
// CHECK-NEXT:        %0 = arith.subf %in_1, %max : f32
// CHECK-NEXT:        %in_2 = math.exp %0 : f32
// CHECK-NEXT:        %1 = arith.divf %in_2, %sum : f32

// -----

// Log-sum-exp subtracts the maximum made 0 where it is infinite: the group's sum is
// rescaled by exp(max - c) where the exp-sum loop was.

func.func @logsumexp(%x: tensor<5x1001xf32>) -> tensor<5xf32> {
  %add = loop.kernel @k_add ins(%x_b = %x : tensor<5x1001xf32>) outs(%add_b : tensor<5xf32>) {
    %0 = arith.constant 0x7f800000 : f32
    %1 = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 5 {
      %amax_r = loop.for %a1 = 0 to 1001 reduce(max) -> f32 {
        %in = loop.load %x_b[%a0, %a1] : memref<5x1001xf32>
        loop.yield %in : f32
      }
      %in_1 = math.absf %amax_r : f32
      %in_2 = arith.cmpf oeq, %in_1, %0 : f32
      %in_3 = arith.select %in_2, %1, %amax_r : f32
      %sum = loop.for %a2 = 0 to 1001 reduce(add) -> f32 {
        %in_4 = loop.load %x_b[%a0, %a2] : memref<5x1001xf32>
        %in_5 = arith.subf %in_4, %in_3 : f32
        %in_6 = math.exp %in_5 : f32
        loop.yield %in_6 : f32
      }
      %in_7 = math.log %sum : f32
      %2 = arith.addf %in_7, %in_3 : f32
      loop.store %2, %add_b[%a0] : memref<5xf32>
    }
  }
  func.return %add : tensor<5xf32>
}

// CHECK-LABEL: func.func @logsumexp
// CHECK:         %amax_r, %sum = loop.for %a1 = 0 to 1001 reduce(online_max, online_sum) -> (f32, f32) {
// CHECK:         %in_3 = arith.select %in_2, %1, %amax_r : f32
// CHECK-NEXT:    %2 = arith.subf %amax_r, %in_3 : f32
// CHECK-NEXT:    %3 = math.exp %2 : f32
// CHECK-NEXT:    %4 = arith.mulf %sum, %3 : f32
// CHECK-NEXT:    %5 = arith.constant 0x7f800000 : f32
// CHECK-NEXT:    %6 = arith.cmpf oeq, %amax_r, %5 : f32
// CHECK-NEXT:    %sum_1 = arith.select %6, %3, %4 : f32
// CHECK-NEXT:    %in_4 = math.log %sum_1 : f32

// -----

// Left alone: the exponent subtracts the maximum of another tensor's row (%y, not %x),
// so the sum's terms are not the max loop's scores.

func.func @other_row(%x: tensor<4x33xf32>, %y: tensor<4x33xf32>) -> tensor<4xf32> {
  %r = loop.kernel @k ins(%x_b = %x : tensor<4x33xf32>, %y_b = %y : tensor<4x33xf32>) outs(%r_b : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      %max = loop.for %a1 = 0 to 33 reduce(max) -> f32 {
        %in = loop.load %y_b[%a0, %a1] : memref<4x33xf32>
        loop.yield %in : f32
      }
      %sum = loop.for %a2 = 0 to 33 reduce(add) -> f32 {
        %in_1 = loop.load %x_b[%a0, %a2] : memref<4x33xf32>
        %0 = arith.subf %in_1, %max : f32
        %in_2 = math.exp %0 : f32
        loop.yield %in_2 : f32
      }
      loop.store %sum, %r_b[%a0] : memref<4xf32>
    }
  }
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @other_row
// CHECK:         %max = loop.for %a1 = 0 to 33 reduce(max) -> f32 {
// CHECK:         %sum = loop.for %a2 = 0 to 33 reduce(add) -> f32 {

// -----

// Left alone: a store between the loops writes the buffer the row is read from (the
// exp-sum's reads see it; merged, they would not).

func.func @write_between(%x: tensor<4x33xf32>) -> tensor<4x33xf32> {
  %r = loop.kernel @k ins(%x_b = %x : tensor<4x33xf32>) outs(%r_b : tensor<4x33xf32>) {
    loop.for %a0 = 0 to 4 {
      %max = loop.for %a1 = 0 to 33 reduce(max) -> f32 {
        %in = loop.load %r_b[%a0, %a1] : memref<4x33xf32>
        loop.yield %in : f32
      }
      loop.store %max, %r_b[%a0, 0] : memref<4x33xf32>
      %sum = loop.for %a2 = 0 to 33 reduce(add) -> f32 {
        %in_1 = loop.load %r_b[%a0, %a2] : memref<4x33xf32>
        %0 = arith.subf %in_1, %max : f32
        %in_2 = math.exp %0 : f32
        loop.yield %in_2 : f32
      }
      loop.store %sum, %r_b[%a0, 1] : memref<4x33xf32>
    }
  }
  func.return %r : tensor<4x33xf32>
}

// CHECK-LABEL: func.func @write_between
// CHECK:         %max = loop.for %a1 = 0 to 33 reduce(max) -> f32 {
// CHECK:         loop.store %max, %r_b[%a0, 0] : memref<4x33xf32>
// CHECK-NEXT:    %sum = loop.for %a2 = 0 to 33 reduce(add) -> f32 {
