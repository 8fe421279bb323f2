// RUN: deplo-opt %s -p batch-walk-steps | filecheck %s
// RUN: deplo-opt %s -p 'batch-walk-steps{batch=4}' | filecheck %s --check-prefix=FOUR
// RUN: deplo-opt %s -p 'batch-walk-steps{batch=1}' | filecheck %s --check-prefix=OFF

// An attention walk: each of 4 query rows walks 16 keys with the online group (its max,
// the weights' sum, 6 value columns). Batched by 8 (walk_batch(16)): a loop of 2 steps,
// rolled, each computing the 8 keys' scores first, their maximum, each key's weight
// (1 where it is the maximum, else exp(score - max)), then each key's values weighed
// into the batch's sums, and yielding the batch as one partial of the group.

// CHECK-LABEL: func.func @walk
// CHECK:         %max, %sum, %acc, %acc_1, %acc_2, %acc_3, %acc_4, %acc_5 = loop.for %a1_b = 0 to 2 reduce(online_max, online_sum, online_sum, online_sum, online_sum, online_sum, online_sum, online_sum) -> (f32, f32, f32, f32, f32, f32, f32, f32) unroll 1 {
// CHECK-NEXT:      %a1 = affine.apply affine_map<(d0) -> ((d0 * 8))> (%a1_b)
// CHECK-NEXT:      %a1_1 = affine.apply affine_map<(d0) -> (((d0 * 8) + 1))> (%a1_b)
// CHECK:           %a1_7 = affine.apply affine_map<(d0) -> (((d0 * 8) + 7))> (%a1_b)
// CHECK-NEXT:      %k0 = loop.load %k_b[%a1] : memref<16xf32>
// CHECK-NEXT:      %score = arith.mulf %q0, %k0 : f32
// CHECK:           %score_7 = arith.mulf %q0, %k0_7 : f32
// CHECK-NOT:       loop.load %v_b
// CHECK:           %batch_max = arith.maximumf %{{.*}}, %score_7 : f32
// CHECK:           %[[SAME:.*]] = arith.cmpf oeq, %score, %batch_max : f32
// CHECK-NEXT:      %[[DIFF:.*]] = arith.subf %score, %batch_max : f32
// CHECK-NEXT:      %[[EXP:.*]] = math.exp %[[DIFF]] : f32
// CHECK-NEXT:      %weight = arith.select %[[SAME]], %{{.*}}, %[[EXP]] : f32
// CHECK:           %weight_7 = arith.select
// CHECK-NEXT:      %v0 = loop.load %v_b[%a1, 0] : memref<16x6xf32>
// CHECK:           arith.mulf %weight, %v0 : f32
// CHECK:           %v5_7 = loop.load %v_b[%a1_7, 5] : memref<16x6xf32>
// CHECK:           loop.yield %batch_max, %{{.*}} : f32, f32, f32, f32, f32, f32, f32, f32
// CHECK:         %o0 = arith.divf %acc, %sum : f32

// FOUR:          loop.for %a1_b = 0 to 4 reduce(online_max
// FOUR:            %a1_3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a1_b)
// FOUR:            %batch_max = arith.maximumf %{{.*}}, %score_3 : f32

// OFF:           loop.for %a1 = 0 to 16 reduce(online_max
// OFF-NEXT:        %k0 = loop.load %k_b[%a1] : memref<16xf32>
// OFF-NOT:         batch_max

func.func @walk(%q: tensor<4xf32>, %k: tensor<16xf32>, %v: tensor<16x6xf32>) -> tensor<4x6xf32> {
  %o = tile.kernel @k_walk axes(%a0 : 4 = free) ins(%q_b = %q : tensor<4xf32>, %k_b = %k : tensor<16xf32>, %v_b = %v : tensor<16x6xf32>) outs(%o_b : tensor<4x6xf32>) {
    %one = arith.constant 1.000000e+00 : f32
    %q0 = loop.load %q_b[%a0] : memref<4xf32>
    %max, %sum, %acc_0, %acc_1, %acc_2, %acc_3, %acc_4, %acc_5 = loop.for %a1 = 0 to 16 reduce(online_max, online_sum, online_sum, online_sum, online_sum, online_sum, online_sum, online_sum) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
      %k0 = loop.load %k_b[%a1] : memref<16xf32>
      %score = arith.mulf %q0, %k0 : f32
      %v0 = loop.load %v_b[%a1, 0] : memref<16x6xf32>
      %v1 = loop.load %v_b[%a1, 1] : memref<16x6xf32>
      %v2 = loop.load %v_b[%a1, 2] : memref<16x6xf32>
      %v3 = loop.load %v_b[%a1, 3] : memref<16x6xf32>
      %v4 = loop.load %v_b[%a1, 4] : memref<16x6xf32>
      %v5 = loop.load %v_b[%a1, 5] : memref<16x6xf32>
      loop.yield %score, %one, %v0, %v1, %v2, %v3, %v4, %v5 : f32, f32, f32, f32, f32, f32, f32, f32
    }
    %o0 = arith.divf %acc_0, %sum : f32
    loop.store %o0, %o_b[%a0, 0] : memref<4x6xf32>
    %o1 = arith.divf %acc_1, %sum : f32
    loop.store %o1, %o_b[%a0, 1] : memref<4x6xf32>
    %o2 = arith.divf %acc_2, %sum : f32
    loop.store %o2, %o_b[%a0, 2] : memref<4x6xf32>
    %o3 = arith.divf %acc_3, %sum : f32
    loop.store %o3, %o_b[%a0, 3] : memref<4x6xf32>
    %o4 = arith.divf %acc_4, %sum : f32
    loop.store %o4, %o_b[%a0, 4] : memref<4x6xf32>
    %o5 = arith.divf %acc_5, %sum : f32
    loop.store %o5, %o_b[%a0, 5] : memref<4x6xf32>
  }
  func.return %o : tensor<4x6xf32>
}
