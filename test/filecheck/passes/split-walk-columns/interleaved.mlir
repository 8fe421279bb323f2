// RUN: deplo-opt %s -p 'split-walk-columns{lanes=2}' | filecheck %s

// A walk whose lanes keep four or more elements each: 16 query elements and 8 value
// columns over two lanes. The elements go round the lanes four at a time (lane_element):
// lane %u keeps query and key elements 4u .. 4u+3 and 4u+8 .. 4u+11, and value columns
// 4u .. 4u+3, so the two lanes' float4 reads of a key row are adjacent 16-byte pieces
// (contiguous halves, 8u .. 8u+7, would put both lanes' reads in the same banks).

// CHECK-LABEL: func.func @wide
// CHECK:         tile.kernel @k_wide axes(%u : 2 = thread, %a0 : 8 = free)
// CHECK:           %q0 = loop.load %q_b[%a0, %u * 4] : memref<8x16xf32>
// CHECK:           %q3 = loop.load %q_b[%a0, %u * 4 + 3] : memref<8x16xf32>
// CHECK-NEXT:      %q4 = loop.load %q_b[%a0, %u * 4 + 8] : memref<8x16xf32>
// CHECK:           %q7 = loop.load %q_b[%a0, %u * 4 + 11] : memref<8x16xf32>
// CHECK-NOT:       loop.load %q_b
// CHECK:             %k4 = loop.load %k_b[%a1, %u * 4 + 8] : memref<6x16xf32>
// CHECK:             %qk = tile.combine add %qk_part across %u : f32
// CHECK:             %v3 = loop.load %v_b[%a1, %u * 4 + 3] : memref<6x8xf32>
// CHECK-NOT:         loop.load %v_b
// CHECK:           loop.store %o0, %o_b[%a0, %u * 4] : memref<8x8xf32>
// CHECK:           loop.store %o3, %o_b[%a0, %u * 4 + 3] : memref<8x8xf32>
// CHECK-NOT:       loop.store

func.func @wide(%q: tensor<8x16xf32>, %k: tensor<6x16xf32>, %v: tensor<6x8xf32>) -> tensor<8x8xf32> {
  %o = tile.kernel @k_wide axes(%a0 : 8 = free) ins(%q_b = %q : tensor<8x16xf32>, %k_b = %k : tensor<6x16xf32>, %v_b = %v : tensor<6x8xf32>) outs(%o_b : tensor<8x8xf32>) {
    %one = arith.constant 1.000000e+00 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %q0 = loop.load %q_b[%a0, 0] : memref<8x16xf32>
    %q1 = loop.load %q_b[%a0, 1] : memref<8x16xf32>
    %q2 = loop.load %q_b[%a0, 2] : memref<8x16xf32>
    %q3 = loop.load %q_b[%a0, 3] : memref<8x16xf32>
    %q4 = loop.load %q_b[%a0, 4] : memref<8x16xf32>
    %q5 = loop.load %q_b[%a0, 5] : memref<8x16xf32>
    %q6 = loop.load %q_b[%a0, 6] : memref<8x16xf32>
    %q7 = loop.load %q_b[%a0, 7] : memref<8x16xf32>
    %q8 = loop.load %q_b[%a0, 8] : memref<8x16xf32>
    %q9 = loop.load %q_b[%a0, 9] : memref<8x16xf32>
    %q10 = loop.load %q_b[%a0, 10] : memref<8x16xf32>
    %q11 = loop.load %q_b[%a0, 11] : memref<8x16xf32>
    %q12 = loop.load %q_b[%a0, 12] : memref<8x16xf32>
    %q13 = loop.load %q_b[%a0, 13] : memref<8x16xf32>
    %q14 = loop.load %q_b[%a0, 14] : memref<8x16xf32>
    %q15 = loop.load %q_b[%a0, 15] : memref<8x16xf32>
    %max, %sum, %acc, %acc_1, %acc_2, %acc_3, %acc_4, %acc_5, %acc_6, %acc_7 = loop.for %a1 = 0 to 6 reduce(online_max, online_sum, online_sum, online_sum, online_sum, online_sum, online_sum, online_sum, online_sum, online_sum) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
      %k0 = loop.load %k_b[%a1, 0] : memref<6x16xf32>
      %p0 = arith.mulf %q0, %k0 : f32
      %c0 = arith.addf %zero, %p0 : f32
      %k1 = loop.load %k_b[%a1, 1] : memref<6x16xf32>
      %p1 = arith.mulf %q1, %k1 : f32
      %c1 = arith.addf %zero, %p1 : f32
      %k2 = loop.load %k_b[%a1, 2] : memref<6x16xf32>
      %p2 = arith.mulf %q2, %k2 : f32
      %c2 = arith.addf %zero, %p2 : f32
      %k3 = loop.load %k_b[%a1, 3] : memref<6x16xf32>
      %p3 = arith.mulf %q3, %k3 : f32
      %c3 = arith.addf %zero, %p3 : f32
      %k4 = loop.load %k_b[%a1, 4] : memref<6x16xf32>
      %p4 = arith.mulf %q4, %k4 : f32
      %c4 = arith.addf %zero, %p4 : f32
      %k5 = loop.load %k_b[%a1, 5] : memref<6x16xf32>
      %p5 = arith.mulf %q5, %k5 : f32
      %c5 = arith.addf %zero, %p5 : f32
      %k6 = loop.load %k_b[%a1, 6] : memref<6x16xf32>
      %p6 = arith.mulf %q6, %k6 : f32
      %c6 = arith.addf %zero, %p6 : f32
      %k7 = loop.load %k_b[%a1, 7] : memref<6x16xf32>
      %p7 = arith.mulf %q7, %k7 : f32
      %c7 = arith.addf %zero, %p7 : f32
      %k8 = loop.load %k_b[%a1, 8] : memref<6x16xf32>
      %p8 = arith.mulf %q8, %k8 : f32
      %c8 = arith.addf %zero, %p8 : f32
      %k9 = loop.load %k_b[%a1, 9] : memref<6x16xf32>
      %p9 = arith.mulf %q9, %k9 : f32
      %c9 = arith.addf %zero, %p9 : f32
      %k10 = loop.load %k_b[%a1, 10] : memref<6x16xf32>
      %p10 = arith.mulf %q10, %k10 : f32
      %c10 = arith.addf %zero, %p10 : f32
      %k11 = loop.load %k_b[%a1, 11] : memref<6x16xf32>
      %p11 = arith.mulf %q11, %k11 : f32
      %c11 = arith.addf %zero, %p11 : f32
      %k12 = loop.load %k_b[%a1, 12] : memref<6x16xf32>
      %p12 = arith.mulf %q12, %k12 : f32
      %c12 = arith.addf %zero, %p12 : f32
      %k13 = loop.load %k_b[%a1, 13] : memref<6x16xf32>
      %p13 = arith.mulf %q13, %k13 : f32
      %c13 = arith.addf %zero, %p13 : f32
      %k14 = loop.load %k_b[%a1, 14] : memref<6x16xf32>
      %p14 = arith.mulf %q14, %k14 : f32
      %c14 = arith.addf %zero, %p14 : f32
      %k15 = loop.load %k_b[%a1, 15] : memref<6x16xf32>
      %p15 = arith.mulf %q15, %k15 : f32
      %c15 = arith.addf %zero, %p15 : f32
      %t0 = arith.addf %c0, %c1 : f32
      %t1 = arith.addf %c2, %c3 : f32
      %t2 = arith.addf %c4, %c5 : f32
      %t3 = arith.addf %c6, %c7 : f32
      %t4 = arith.addf %c8, %c9 : f32
      %t5 = arith.addf %c10, %c11 : f32
      %t6 = arith.addf %c12, %c13 : f32
      %t7 = arith.addf %c14, %c15 : f32
      %t8 = arith.addf %t0, %t1 : f32
      %t9 = arith.addf %t2, %t3 : f32
      %t10 = arith.addf %t4, %t5 : f32
      %t11 = arith.addf %t6, %t7 : f32
      %t12 = arith.addf %t8, %t9 : f32
      %t13 = arith.addf %t10, %t11 : f32
      %qk = arith.addf %t12, %t13 : f32
      %v0 = loop.load %v_b[%a1, 0] : memref<6x8xf32>
      %v1 = loop.load %v_b[%a1, 1] : memref<6x8xf32>
      %v2 = loop.load %v_b[%a1, 2] : memref<6x8xf32>
      %v3 = loop.load %v_b[%a1, 3] : memref<6x8xf32>
      %v4 = loop.load %v_b[%a1, 4] : memref<6x8xf32>
      %v5 = loop.load %v_b[%a1, 5] : memref<6x8xf32>
      %v6 = loop.load %v_b[%a1, 6] : memref<6x8xf32>
      %v7 = loop.load %v_b[%a1, 7] : memref<6x8xf32>
      loop.yield %qk, %one, %v0, %v1, %v2, %v3, %v4, %v5, %v6, %v7 : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
    }
    %o0 = arith.divf %acc, %sum : f32
    loop.store %o0, %o_b[%a0, 0] : memref<8x8xf32>
    %o1 = arith.divf %acc_1, %sum : f32
    loop.store %o1, %o_b[%a0, 1] : memref<8x8xf32>
    %o2 = arith.divf %acc_2, %sum : f32
    loop.store %o2, %o_b[%a0, 2] : memref<8x8xf32>
    %o3 = arith.divf %acc_3, %sum : f32
    loop.store %o3, %o_b[%a0, 3] : memref<8x8xf32>
    %o4 = arith.divf %acc_4, %sum : f32
    loop.store %o4, %o_b[%a0, 4] : memref<8x8xf32>
    %o5 = arith.divf %acc_5, %sum : f32
    loop.store %o5, %o_b[%a0, 5] : memref<8x8xf32>
    %o6 = arith.divf %acc_6, %sum : f32
    loop.store %o6, %o_b[%a0, 6] : memref<8x8xf32>
    %o7 = arith.divf %acc_7, %sum : f32
    loop.store %o7, %o_b[%a0, 7] : memref<8x8xf32>
  }
  func.return %o : tensor<8x8xf32>
}
