// RUN: deplo-opt %s -p 'unroll-dots{chains=1}' | filecheck %s
// RUN: deplo-opt %s -p unroll-dots | filecheck %s --check-prefix=CHAINS
// RUN: deplo-opt %s -p 'unroll-dots{max_extent=2}' | filecheck %s --check-prefix=SHORT

// Attention's walk after fuse: each key's score is a dot product over the head dim (4
// here). Unrolled, the query row's loads (indices from outside the walk) move before it,
// loaded once; the key's loads stay inside. The sum keeps the loop's order: 0 + p0 + p1 ..

func.func @walk(%q: tensor<6x4xf32>, %k: tensor<9x4xf32>, %v: tensor<9x2xf32>) -> tensor<6x2xf32> {
  %o = loop.kernel @k_o ins(%q_b = %q : tensor<6x4xf32>, %k_b = %k : tensor<9x4xf32>, %v_b = %v : tensor<9x2xf32>) outs(%o_b : tensor<6x2xf32>) {
    %one = arith.constant 1.000000e+00 : f32
    loop.for %a0 = 0 to 6 {
      %max, %sum, %acc, %acc_1 = loop.for %a1 = 0 to 9 reduce(online_max, online_sum, online_sum, online_sum) -> (f32, f32, f32, f32) {
        %qk = loop.for %a2 = 0 to 4 reduce(add) -> f32 {
          %in = loop.load %q_b[%a0, %a2] : memref<6x4xf32>
          %in_1 = loop.load %k_b[%a1, %a2] : memref<9x4xf32>
          %p = arith.mulf %in, %in_1 : f32
          loop.yield %p : f32
        }
        %value = loop.load %v_b[%a1, 0] : memref<9x2xf32>
        %value_1 = loop.load %v_b[%a1, 1] : memref<9x2xf32>
        loop.yield %qk, %one, %value, %value_1 : f32, f32, f32, f32
      }
      %0 = arith.divf %acc, %sum : f32
      loop.store %0, %o_b[%a0, 0] : memref<6x2xf32>
      %1 = arith.divf %acc_1, %sum : f32
      loop.store %1, %o_b[%a0, 1] : memref<6x2xf32>
    }
  }
  func.return %o : tensor<6x2xf32>
}

// CHECK-LABEL: func.func @walk
// CHECK:         loop.for %a0 = 0 to 6 {
// CHECK-COUNT-4:   loop.load %q_b[%a0, {{[0-3]}}] : memref<6x4xf32>
// CHECK:           loop.for %a1 = 0 to 9 reduce(online_max, online_sum, online_sum, online_sum)
// CHECK-NOT:         loop.for
// CHECK-NOT:         loop.load %q_b
// CHECK:             loop.load %k_b[%a1, 0] : memref<9x4xf32>
// CHECK:             %[[S0:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK:             %[[S1:.*]] = arith.addf %[[S0]], %{{.*}} : f32
// CHECK:             %[[S2:.*]] = arith.addf %[[S1]], %{{.*}} : f32
// CHECK:             %qk = arith.addf %[[S2]], %{{.*}} : f32
// CHECK:             loop.yield %qk, %one, %value, %value_1

// By default the products go into four chains, each from 0, added pairwise.
// CHAINS-LABEL: func.func @walk
// CHAINS:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHAINS:           %[[C0:.*]] = arith.addf %[[Z]], %{{.*}} : f32
// CHAINS:           %[[C1:.*]] = arith.addf %[[Z]], %{{.*}} : f32
// CHAINS:           %[[C2:.*]] = arith.addf %[[Z]], %{{.*}} : f32
// CHAINS:           %[[C3:.*]] = arith.addf %[[Z]], %{{.*}} : f32
// CHAINS-NEXT:      %[[L:.*]] = arith.addf %[[C0]], %[[C1]] : f32
// CHAINS-NEXT:      %[[R:.*]] = arith.addf %[[C2]], %[[C3]] : f32
// CHAINS-NEXT:      %qk = arith.addf %[[L]], %[[R]] : f32

// Dot products longer than max_extent stay loops.
// SHORT-LABEL: func.func @walk
// SHORT:         %qk = loop.for %a2 = 0 to 4 reduce(add) -> f32 {
// SHORT-NEXT:      %in = loop.load %q_b[%a0, %a2] : memref<6x4xf32>
