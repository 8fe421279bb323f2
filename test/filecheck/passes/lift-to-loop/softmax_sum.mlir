// RUN: deplo-opt %s -p lift-to-loop | filecheck %s

// ten.softmax_sum: free loops over the kept axes, then one walk over the reduced axis of
// the online group: the score, a 1 (the weights' sum) and one value per column; each
// column's accumulator over the sum is stored. `safe`: a row of -inf scores stores 0.

func.func @attend(%s: tensor<3x5xf32>, %v: tensor<3x5x2xf32>) -> tensor<3x2xf32> {
  %o = ten.softmax_sum %s, %v dim 1 safe : tensor<3x5xf32>, tensor<3x5x2xf32> -> tensor<3x2xf32>
  func.return %o : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @attend
// CHECK:         %o = loop.kernel @k_o ins(%s_b = %s : tensor<3x5xf32>, %v_b = %v : tensor<3x5x2xf32>) outs(%o_b : tensor<3x2xf32>)
// CHECK:           loop.for %a0 = 0 to 3 {
// CHECK-NEXT:        %max, %sum, %acc, %acc_1 = loop.for %a1 = 0 to 5 reduce(online_max, online_sum, online_sum, online_sum) -> (f32, f32, f32, f32) {
// CHECK-NEXT:          %score = loop.load %s_b[%a0, %a1] : memref<3x5xf32>
// CHECK-NEXT:          %one = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:          %value = loop.load %v_b[%a0, %a1, 0] : memref<3x5x2xf32>
// CHECK-NEXT:          %value_1 = loop.load %v_b[%a0, %a1, 1] : memref<3x5x2xf32>
// CHECK-NEXT:          loop.yield %score, %one, %value, %value_1 : f32, f32, f32, f32
// CHECK:             %[[MEAN:.*]] = arith.divf %acc, %sum : f32
// CHECK:             %[[EMPTY:.*]] = arith.cmpf oeq, %max, %{{.*}} : f32
// CHECK:             %[[PICK:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[MEAN]] : f32
// CHECK-NEXT:        loop.store %[[PICK]], %o_b[%a0, 0] : memref<3x2xf32>
// CHECK:             loop.store %{{.*}}, %o_b[%a0, 1] : memref<3x2xf32>
