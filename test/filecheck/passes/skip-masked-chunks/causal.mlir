// RUN: deplo-opt %s -p skip-masked-chunks | filecheck %s
// RUN: deplo-opt %s -p 'skip-masked-chunks{skip=false}' | filecheck %s --check-prefix=OFF

// A causal walk after chunk-walk: 16 queries a block (%a0 = %a0_b * 16 + %a0_r), keys in
// chunks of 4. Query %a0 attends to keys <= %a0, so block %a0_b reaches key
// 16 * %a0_b + 15: chunks below (16 * %a0_b + 15 + 4) floordiv 4.

func.func @causal(%q: tensor<32x2xf32>, %k: tensor<32x2xf32>, %v: tensor<32x1xf32>) -> tensor<32x1xf32> {
  %o = tile.kernel @k_causal axes(%a0_r : 16 = thread, %t : 2 = thread, %a0_b : 2 = block) ins(%q_b = %q : tensor<32x2xf32>, %k_b = %k : tensor<32x2xf32>, %v_b = %v : tensor<32x1xf32>) outs(%o_b : tensor<32x1xf32>) {
    %a0 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a0_b, %a0_r)
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    %one = arith.constant 1.000000e+00 : f32
    %ninf = arith.constant 0xff800000 : f32
    %pos = arith.index_cast %a0 : index to i64
    %q0 = loop.load %q_b[%a0, 0] : memref<32x2xf32>
    %max_part, %sum_part, %acc_part = loop.for %a1_o = 0 to 8 reduce(online_max, online_sum, online_sum) -> (f32, f32, f32) {
      %max_c, %sum_c, %acc_c = tile.strided_for %a1_i = %t to 4 step 2 reduce(online_max, online_sum, online_sum) -> (f32, f32, f32) {
        %a1 = affine.apply affine_map<(d0, d1) -> (((d0 * 4) + d1))> (%a1_o, %a1_i)
        %k0 = loop.load %k_b[%a1, 0] : memref<32x2xf32>
        %s = arith.mulf %q0, %k0 : f32
        %key = arith.index_cast %a1 : index to i64
        %live = arith.cmpi sle, %key, %pos : i64
        %score = arith.select %live, %s, %ninf : f32
        %value = loop.load %v_b[%a1, 0] : memref<32x1xf32>
        loop.yield %score, %one, %value : f32, f32, f32
      }
      loop.yield %max_c, %sum_c, %acc_c : f32, f32, f32
    }
    %max, %sum, %acc = tile.combine online_max, online_sum, online_sum %max_part, %sum_part, %acc_part across %t : f32, f32, f32
    %out = arith.divf %acc, %sum : f32
    scf.if %first {
      loop.store %out, %o_b[%a0, 0] : memref<32x1xf32>
    }
  }
  func.return %o : tensor<32x1xf32>
}

// CHECK-LABEL: func.func @causal
// CHECK:         %reach = affine.apply affine_map<(d0) -> ((((d0 * 16) + 19) floordiv 4))> (%a0_b)
// CHECK-NEXT:    %max_part, %sum_part, %acc_part = loop.for %a1_o = 0 to 8 below %reach reduce(online_max, online_sum, online_sum)
// CHECK:           tile.strided_for %a1_i = %t to 4 step 2 reduce(online_max, online_sum, online_sum)
// CHECK:             %score = arith.select %live, %s, %ninf : f32

// OFF-LABEL:   func.func @causal
// OFF-NOT:     below
// OFF:         loop.for %a1_o = 0 to 8 reduce(online_max, online_sum, online_sum)

func.func @strict(%q: tensor<32x2xf32>, %k: tensor<32x2xf32>) -> tensor<32xf32> {
  %o = tile.kernel @k_strict axes(%a0_r : 16 = thread, %t : 2 = thread, %a0_b : 2 = block) ins(%q_b = %q : tensor<32x2xf32>, %k_b = %k : tensor<32x2xf32>) outs(%o_b : tensor<32xf32>) {
    %a0 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a0_b, %a0_r)
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    %one = arith.constant 1.000000e+00 : f32
    %ninf = arith.constant 0xff800000 : f32
    %pos = arith.index_cast %a0 : index to i64
    %q0 = loop.load %q_b[%a0, 0] : memref<32x2xf32>
    %max_part, %sum_part = loop.for %a1_o = 0 to 8 reduce(online_max, online_sum) -> (f32, f32) {
      %max_c, %sum_c = tile.strided_for %a1_i = %t to 4 step 2 reduce(online_max, online_sum) -> (f32, f32) {
        %a1 = affine.apply affine_map<(d0, d1) -> (((d0 * 4) + d1))> (%a1_o, %a1_i)
        %k0 = loop.load %k_b[%a1, 0] : memref<32x2xf32>
        %s = arith.mulf %q0, %k0 : f32
        %key = arith.index_cast %a1 : index to i64
        %live = arith.cmpi slt, %key, %pos : i64
        %score = arith.select %live, %s, %ninf : f32
        loop.yield %score, %one : f32, f32
      }
      loop.yield %max_c, %sum_c : f32, f32
    }
    %max, %sum = tile.combine online_max, online_sum %max_part, %sum_part across %t : f32, f32
    scf.if %first {
      loop.store %sum, %o_b[%a0] : memref<32xf32>
    }
  }
  func.return %o : tensor<32xf32>
}

// key < query: query 0 has no live key, so the chunks a block skips could be all it
// would see; skipping them would change its sums. Left as it was.
// CHECK-LABEL: func.func @strict
// CHECK-NOT:     below
// CHECK:         loop.for %a1_o = 0 to 8 reduce(online_max, online_sum)
