// RUN: deplo-opt %s -p 'chunk-walk{chunk=4}' | filecheck %s
// RUN: deplo-opt %s -p chunk-walk | filecheck %s --check-prefix=WHOLE
// RUN: deplo-opt %s -p 'chunk-walk{chunk=1}' | filecheck %s --check-prefix=OFF

// Attention's walk after blockify-launch: 16 rows (queries) of a block, 2 threads a row
// dealing out 6 keys. The rows share the key and value rows, so the walk is split into
// chunks a block can stage: 4 keys a chunk leaves a short last chunk, whose steps past
// the 6th key yield the group's identity and whose loads are guarded. By default the
// chunk (walk_chunk: 64 keys of these 12 bytes) is longer than the walk: one chunk.

func.func @walk(%q: tensor<32x2xf32>, %k: tensor<6x2xf32>, %v: tensor<6x1xf32>) -> tensor<32x1xf32> {
  %o = tile.kernel @k_walk axes(%a0_r : 16 = thread, %t : 2 = thread, %a0_b : 2 = block) ins(%q_b = %q : tensor<32x2xf32>, %k_b = %k : tensor<6x2xf32>, %v_b = %v : tensor<6x1xf32>) outs(%o_b : tensor<32x1xf32>) {
    %a0 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a0_b, %a0_r)
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    %one = arith.constant 1.000000e+00 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %q0 = loop.load %q_b[%a0, 0] : memref<32x2xf32>
    %q1 = loop.load %q_b[%a0, 1] : memref<32x2xf32>
    %max_part, %sum_part, %acc_part = tile.strided_for %a1 = %t to 6 step 2 reduce(online_max, online_sum, online_sum) -> (f32, f32, f32) {
      %k0 = loop.load %k_b[%a1, 0] : memref<6x2xf32>
      %p0 = arith.mulf %q0, %k0 : f32
      %s0 = arith.addf %zero, %p0 : f32
      %k1 = loop.load %k_b[%a1, 1] : memref<6x2xf32>
      %p1 = arith.mulf %q1, %k1 : f32
      %score = arith.addf %s0, %p1 : f32
      %value = loop.load %v_b[%a1, 0] : memref<6x1xf32>
      loop.yield %score, %one, %value : f32, f32, f32
    }
    %max, %sum, %acc = tile.combine online_max, online_sum, online_sum %max_part, %sum_part, %acc_part across %t : f32, f32, f32
    %out = arith.divf %acc, %sum : f32
    scf.if %first {
      loop.store %out, %o_b[%a0, 0] : memref<32x1xf32>
    }
  }
  func.return %o : tensor<32x1xf32>
}

// CHECK-LABEL: func.func @walk
// CHECK:         %max_part, %sum_part, %acc_part = loop.for %a1_o = 0 to 2 reduce(online_max, online_sum, online_sum) -> (f32, f32, f32) {
// CHECK-NEXT:      %max_part_c, %sum_part_c, %acc_part_c = tile.strided_for %a1_i = %t to 4 step 2 reduce(online_max, online_sum, online_sum) -> (f32, f32, f32) {
// CHECK-NEXT:        %a1 = affine.apply affine_map<(d0, d1) -> (((d0 * 4) + d1))> (%a1_o, %a1_i)
// CHECK:             loop.load %k_b[%a1, 0] guarded : memref<6x2xf32>
// CHECK:             loop.load %v_b[%a1, 0] guarded : memref<6x1xf32>
// CHECK:             %in_chunk = arith.cmpi ult, %a1, %{{.*}} : index
// CHECK:             %[[M:.*]] = arith.select %in_chunk, %score, %{{.*}} : f32
// CHECK:             %[[S:.*]] = arith.select %in_chunk, %one, %{{.*}} : f32
// CHECK:             %[[V:.*]] = arith.select %in_chunk, %value, %{{.*}} : f32
// CHECK-NEXT:        loop.yield %[[M]], %[[S]], %[[V]] : f32, f32, f32
// CHECK:           loop.yield %max_part_c, %sum_part_c, %acc_part_c : f32, f32, f32
// CHECK:         tile.combine online_max, online_sum, online_sum %max_part, %sum_part, %acc_part across %t

// WHOLE:         loop.for %a1_o = 0 to 1 reduce(online_max, online_sum, online_sum)
// WHOLE-NEXT:      tile.strided_for %a1_i = %t to 6 step 2 reduce(online_max, online_sum, online_sum)
// WHOLE-NOT:       in_chunk
// WHOLE-NOT:       guarded

// OFF:           tile.strided_for %a1 = %t to 6 step 2 reduce(online_max, online_sum, online_sum)
// OFF-NOT:       loop.for

func.func @unshared(%q: tensor<2x2xf32>, %k: tensor<64x2xf32>) -> tensor<2xf32> {
  %o = tile.kernel @k_unshared axes(%t : 32 = thread, %a0 : 2 = block) ins(%q_b = %q : tensor<2x2xf32>, %k_b = %k : tensor<64x2xf32>) outs(%o_b : tensor<2xf32>) {
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    %one = arith.constant 1.000000e+00 : f32
    %q0 = loop.load %q_b[%a0, 0] : memref<2x2xf32>
    %max_part, %sum_part = tile.strided_for %a1 = %t to 64 step 32 reduce(online_max, online_sum) -> (f32, f32) {
      %k0 = loop.load %k_b[%a1, 0] : memref<64x2xf32>
      %score = arith.mulf %q0, %k0 : f32
      loop.yield %score, %one : f32, f32
    }
    %max, %sum = tile.combine online_max, online_sum %max_part, %sum_part across %t : f32, f32
    scf.if %first {
      loop.store %sum, %o_b[%a0] : memref<2xf32>
    }
  }
  func.return %o : tensor<2xf32>
}

// One row a block: no other thread reads its keys, nothing to stage, the walk stays whole.
// CHECK-LABEL: func.func @unshared
// CHECK:         tile.strided_for %a1 = %t to 64 step 32 reduce(online_max, online_sum)
// CHECK-NOT:     loop.for
