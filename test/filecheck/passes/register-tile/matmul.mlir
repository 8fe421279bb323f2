// RUN: deplo-opt %s -p 'register-tile{tm=4 tn=4}' | filecheck %s
// RUN: deplo-opt %s -p "register-tile{tm=2 tn=2}" | filecheck %s --check-prefix=TWO
// RUN: deplo-opt %s -p register-tile | filecheck %s --check-prefix=MODEL

// The seed's relu(matmul(x + b, w)) as tileify leaves it: one output per (%a0, %a1).
// Tiled 4 x 4: 16 accumulators in one K loop; x[m_i, k] (and x + b) once per row, w[k, n_j]
// once per column, b[k] once; the epilogue (relu, store) once per output.
func.func @seed(%x: tensor<8x16xf32>, %b: tensor<16xf32>, %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %y = tile.kernel @k_relu axes(%a0 : 8 = free, %a1 : 8 = free) ins(%x_b = %x : tensor<8x16xf32>, %b_b = %b : tensor<16xf32>, %w_b = %w : tensor<16x8xf32>) outs(%y_b : tensor<8x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %acc = loop.for %k = 0 to 16 reduce(add) -> f32 {
      %xv = loop.load %x_b[%a0, %k] : memref<8x16xf32>
      %bv = loop.load %b_b[%k] : memref<16xf32>
      %s = arith.addf %xv, %bv : f32
      %wv = loop.load %w_b[%k, %a1] : memref<16x8xf32>
      %p = arith.mulf %s, %wv : f32
      loop.yield %p : f32
    }
    %r = arith.maximumf %acc, %zero : f32
    loop.store %r, %y_b[%a0, %a1] : memref<8x8xf32>
  }
  func.return %y : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @seed
// CHECK:       tile.kernel @k_relu axes(%a0_g : 2 = free, %a1_g : 2 = free)
// CHECK-SAME:  schedule = #tile.schedule<thread = [4, 4]>}
// CHECK:       %a0_r0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a0_g)
// CHECK:       %a0_r3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a0_g)
// CHECK:       %a1_c0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a1_g)
// CHECK:       %a1_c3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a1_g)
// CHECK:       %zero = arith.constant
// CHECK-NOT:   arith.constant
// CHECK:       %acc_r0c0, %acc_r0c1, %acc_r0c2, %acc_r0c3, %acc_r1c0, {{.*}}, %acc_r3c3 = loop.for %k = 0 to 16 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// Row 0 loads x and b, adds them, and loads the four columns of w: 6 loads.
// CHECK-NEXT:    %xv_r0 = loop.load %x_b[%a0_r0, %k]
// CHECK-NEXT:    %bv = loop.load %b_b[%k]
// CHECK-NEXT:    %s_r0 = arith.addf %xv_r0, %bv : f32
// CHECK-NEXT:    %wv_c0 = loop.load %w_b[%k, %a1_c0]
// CHECK-NEXT:    %p_r0c0 = arith.mulf %s_r0, %wv_c0 : f32
// CHECK-NEXT:    %wv_c1 = loop.load %w_b[%k, %a1_c1]
// CHECK-NEXT:    %p_r0c1 = arith.mulf %s_r0, %wv_c1 : f32
// CHECK-NEXT:    %wv_c2 = loop.load %w_b[%k, %a1_c2]
// CHECK-NEXT:    %p_r0c2 = arith.mulf %s_r0, %wv_c2 : f32
// CHECK-NEXT:    %wv_c3 = loop.load %w_b[%k, %a1_c3]
// CHECK-NEXT:    %p_r0c3 = arith.mulf %s_r0, %wv_c3 : f32
// Every other row loads only its x: the columns of w and b[k] are reused from registers.
// CHECK-NEXT:    %xv_r1 = loop.load %x_b[%a0_r1, %k]
// CHECK-NEXT:    %s_r1 = arith.addf %xv_r1, %bv : f32
// CHECK-NEXT:    %p_r1c0 = arith.mulf %s_r1, %wv_c0 : f32
// CHECK-NEXT:    %p_r1c1 = arith.mulf %s_r1, %wv_c1 : f32
// CHECK-NEXT:    %p_r1c2 = arith.mulf %s_r1, %wv_c2 : f32
// CHECK-NEXT:    %p_r1c3 = arith.mulf %s_r1, %wv_c3 : f32
// CHECK-NEXT:    %xv_r2 = loop.load %x_b[%a0_r2, %k]
// CHECK:         %xv_r3 = loop.load %x_b[%a0_r3, %k]
// CHECK-NOT:     loop.load
// CHECK:         loop.yield %p_r0c0, %p_r0c1, %p_r0c2, %p_r0c3, %p_r1c0, {{.*}}, %p_r3c3 : f32, f32
// CHECK-NEXT:  }
// The epilogue, once per output of the tile.
// CHECK-NEXT:  %r_r0c0 = arith.maximumf %acc_r0c0, %zero : f32
// CHECK-NEXT:  loop.store %r_r0c0, %y_b[%a0_r0, %a1_c0]
// CHECK-NEXT:  %r_r0c1 = arith.maximumf %acc_r0c1, %zero : f32
// CHECK-NEXT:  loop.store %r_r0c1, %y_b[%a0_r0, %a1_c1]
// CHECK-COUNT-13: loop.store
// CHECK:       %r_r3c3 = arith.maximumf %acc_r3c3, %zero : f32
// CHECK-NEXT:  loop.store %r_r3c3, %y_b[%a0_r3, %a1_c3]
// CHECK-NEXT:  }

// TWO-LABEL: func.func @seed
// TWO:       tile.kernel @k_relu axes(%a0_g : 4 = free, %a1_g : 4 = free)
// TWO-SAME:  schedule = #tile.schedule<thread = [2, 2]>}
// TWO:       %acc_r0c0, %acc_r0c1, %acc_r1c0, %acc_r1c1 = loop.for %k = 0 to 16 reduce(add, add, add, add) -> (f32, f32, f32, f32) {
// TWO-COUNT-2: loop.load %x_b
// TWO-NOT:   loop.load %x_b
// TWO:       loop.yield %p_r0c0, %p_r0c1, %p_r1c0, %p_r1c1 : f32, f32, f32, f32
// TWO-COUNT-4: loop.store

// The default options (tm = tn = 0) ask the planner (plan_matmul). It has no tile for
// the seed's 8 x 8 output, and picks 4 x 4 register tiles in blocks of 16 x 16 threads
// (64 x 64 outputs) with K chunks of 16 for linear (1,128,256) x (512,256)^T, recorded in
// its #tile.schedule.
func.func @linear(%x: tensor<1x128x256xf32>, %x1: tensor<512x256xf32>) -> tensor<1x128x512xf32> {
  %linear = tile.kernel @k_linear axes(%a0 : 128 = free, %a1 : 512 = free) ins(%x_b = %x : tensor<1x128x256xf32>, %x1_b = %x1 : tensor<512x256xf32>) outs(%linear_b : tensor<1x128x512xf32>) attributes {covers = ["linear"]} {
    %linear_1 = loop.for %a2 = 0 to 256 reduce(add) -> f32 {
      %in = loop.load %x_b[0, %a0, %a2] : memref<1x128x256xf32>
      %in_1 = loop.load %x1_b[%a1, %a2] : memref<512x256xf32>
      %in_2 = arith.mulf %in, %in_1 : f32
      loop.yield %in_2 : f32
    }
    loop.store %linear_1, %linear_b[0, %a0, %a1] : memref<1x128x512xf32>
  }
  func.return %linear : tensor<1x128x512xf32>
}

// MODEL-LABEL: func.func @seed
// MODEL:       tile.kernel @k_relu axes(%a0 : 8 = free, %a1 : 8 = free)
// MODEL-NOT:   schedule
// The cost model's tile for 128 x 512 (K 256, no split here): 32 x 64 blocks of 8 x 16
// threads, 4 x 4 each, and no launch-bounds cap (no resident: 1).
// MODEL-LABEL: func.func @linear
// MODEL:       tile.kernel @k_linear axes(%a0_g : 32 = free, %a1_g : 128 = free)
// MODEL-SAME:  schedule = #tile.schedule<thread = [4, 4], threads = [8, 16], k_chunk = 16>}
// MODEL:       %a1_c3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a1_g)
// MODEL-NEXT:  %linear_r0c0, {{.*}}, %linear_r3c3 = loop.for %a2 = 0 to 256 reduce(add, {{.*}}) -> (f32, {{.*}}) {
// MODEL-NEXT:    %in_r0 = loop.load %x_b[0, %a0_r0, %a2] : memref<1x128x256xf32>
// MODEL-NEXT:    %in_c0 = loop.load %x1_b[%a1_c0, %a2] : memref<512x256xf32>
// MODEL-COUNT-16: loop.store
