// RUN: deplo-opt %s -p 'split-walk-columns{lanes=2}' | filecheck %s
// RUN: deplo-opt %s -p split-walk-columns | filecheck %s --check-prefix=FEW

// An attention walk before cooperative-reduce: each of 8 query rows walks 6 keys, its
// score the dot product of 4 query elements (loaded before the walk) with the key's,
// in chains (unroll-dots), and 4 value columns. Two lanes a row: lane %u keeps query
// elements and value columns 2 * %u and 2 * %u + 1, adds its two products and the
// other lane's across %u, and stores its two columns.

func.func @walk(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>, %v: tensor<6x4xf32>) -> tensor<8x4xf32> {
  %o = tile.kernel @k_walk axes(%a0 : 8 = free) ins(%q_b = %q : tensor<8x4xf32>, %k_b = %k : tensor<6x4xf32>, %v_b = %v : tensor<6x4xf32>) outs(%o_b : tensor<8x4xf32>) {
    %one = arith.constant 1.000000e+00 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %q0 = loop.load %q_b[%a0, 0] : memref<8x4xf32>
    %q1 = loop.load %q_b[%a0, 1] : memref<8x4xf32>
    %q2 = loop.load %q_b[%a0, 2] : memref<8x4xf32>
    %q3 = loop.load %q_b[%a0, 3] : memref<8x4xf32>
    %max, %sum, %acc, %acc_1, %acc_2, %acc_3 = loop.for %a1 = 0 to 6 reduce(online_max, online_sum, online_sum, online_sum, online_sum, online_sum) -> (f32, f32, f32, f32, f32, f32) {
      %k0 = loop.load %k_b[%a1, 0] : memref<6x4xf32>
      %p0 = arith.mulf %q0, %k0 : f32
      %c0 = arith.addf %zero, %p0 : f32
      %k1 = loop.load %k_b[%a1, 1] : memref<6x4xf32>
      %p1 = arith.mulf %q1, %k1 : f32
      %c1 = arith.addf %zero, %p1 : f32
      %k2 = loop.load %k_b[%a1, 2] : memref<6x4xf32>
      %p2 = arith.mulf %q2, %k2 : f32
      %c2 = arith.addf %zero, %p2 : f32
      %k3 = loop.load %k_b[%a1, 3] : memref<6x4xf32>
      %p3 = arith.mulf %q3, %k3 : f32
      %c3 = arith.addf %zero, %p3 : f32
      %l = arith.addf %c0, %c1 : f32
      %r = arith.addf %c2, %c3 : f32
      %qk = arith.addf %l, %r : f32
      %v0 = loop.load %v_b[%a1, 0] : memref<6x4xf32>
      %v1 = loop.load %v_b[%a1, 1] : memref<6x4xf32>
      %v2 = loop.load %v_b[%a1, 2] : memref<6x4xf32>
      %v3 = loop.load %v_b[%a1, 3] : memref<6x4xf32>
      loop.yield %qk, %one, %v0, %v1, %v2, %v3 : f32, f32, f32, f32, f32, f32
    }
    %o0 = arith.divf %acc, %sum : f32
    loop.store %o0, %o_b[%a0, 0] : memref<8x4xf32>
    %o1 = arith.divf %acc_1, %sum : f32
    loop.store %o1, %o_b[%a0, 1] : memref<8x4xf32>
    %o2 = arith.divf %acc_2, %sum : f32
    loop.store %o2, %o_b[%a0, 2] : memref<8x4xf32>
    %o3 = arith.divf %acc_3, %sum : f32
    loop.store %o3, %o_b[%a0, 3] : memref<8x4xf32>
  }
  func.return %o : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @walk
// CHECK:         tile.kernel @k_walk axes(%u : 2 = thread, %a0 : 8 = free)
// CHECK:           %q0 = loop.load %q_b[%a0, %u * 2] : memref<8x4xf32>
// CHECK-NEXT:      %q1 = loop.load %q_b[%a0, %u * 2 + 1] : memref<8x4xf32>
// CHECK-NOT:       loop.load %q_b
// CHECK:           %max, %sum, %acc, %acc_1 = loop.for %a1 = 0 to 6 reduce(online_max, online_sum, online_sum, online_sum) -> (f32, f32, f32, f32) {
// CHECK:             %k0 = loop.load %k_b[%a1, %u * 2] : memref<6x4xf32>
// CHECK:             %k1 = loop.load %k_b[%a1, %u * 2 + 1] : memref<6x4xf32>
// CHECK-NOT:         loop.load %k_b
// CHECK:             %qk_part = arith.addf
// CHECK-NEXT:        %qk = tile.combine add %qk_part across %u : f32
// CHECK:             %v0 = loop.load %v_b[%a1, %u * 2] : memref<6x4xf32>
// CHECK-NEXT:        %v1 = loop.load %v_b[%a1, %u * 2 + 1] : memref<6x4xf32>
// CHECK-NEXT:        loop.yield %qk, %one, %v0, %v1 : f32, f32, f32, f32
// CHECK:           %o0 = arith.divf %acc, %sum : f32
// CHECK-NEXT:      loop.store %o0, %o_b[%a0, %u * 2] : memref<8x4xf32>
// CHECK-NEXT:      %o1 = arith.divf %acc_1, %sum : f32
// CHECK-NEXT:      loop.store %o1, %o_b[%a0, %u * 2 + 1] : memref<8x4xf32>
// CHECK-NEXT:    }

// By default (walk_column_lanes) 8 rows are too few to split (a decode step's few rows
// split their keys instead): the walk is left whole.
// FEW-LABEL: func.func @walk
// FEW:         tile.kernel @k_walk axes(%a0 : 8 = free)
// FEW:         loop.for %a1 = 0 to 6 reduce(online_max, online_sum, online_sum, online_sum, online_sum, online_sum)
