// RUN: deplo-opt %s -p 'register-tile{tm=4 tn=4}' | filecheck %s
// RUN: deplo-opt %s -p 'register-tile{tm=4 tn=4},register-tile{tm=4 tn=4}' | filecheck %s
// RUN: deplo-opt %s -p register-tile | filecheck %s --check-prefix=MODEL
// RUN: not deplo-opt %s -p 'register-tile{tm=0 tn=4}' 2>&1 | filecheck %s --check-prefix=ERR

// The planner (the default options) has no tile for these small shapes: none is tiled.
// MODEL-LABEL: func.func @one_axis
// MODEL:       tile.kernel @k_maxplus axes(%a0 : 8 = free, %a1 : 6 = free)
// MODEL-NOT:   schedule
// MODEL:       %m = loop.for %k = 0 to 16 reduce(max) -> f32 {
// ERR: register-tile: tm=0 and tn=4 must be at least 1 (or both 0: the planner's)

// N = 6 is not a multiple of 4: that axis is left alone and only the rows are tiled.
// A reduce other than add keeps its kind in every accumulator (max-plus product).
func.func @one_axis(%x: tensor<8x16xf32>, %w: tensor<16x6xf32>) -> tensor<8x6xf32> {
  %y = tile.kernel @k_maxplus axes(%a0 : 8 = free, %a1 : 6 = free) ins(%x_b = %x : tensor<8x16xf32>, %w_b = %w : tensor<16x6xf32>) outs(%y_b : tensor<8x6xf32>) {
    %m = loop.for %k = 0 to 16 reduce(max) -> f32 {
      %xv = loop.load %x_b[%a0, %k] : memref<8x16xf32>
      %wv = loop.load %w_b[%k, %a1] : memref<16x6xf32>
      %s = arith.addf %xv, %wv : f32
      loop.yield %s : f32
    }
    loop.store %m, %y_b[%a0, %a1] : memref<8x6xf32>
  }
  func.return %y : tensor<8x6xf32>
}

// CHECK-LABEL: func.func @one_axis
// CHECK:       tile.kernel @k_maxplus axes(%a0_g : 2 = free, %a1 : 6 = free)
// CHECK-SAME:  schedule = #tile.schedule<thread = [4, 1]>
// CHECK:       %m_r0, %m_r1, %m_r2, %m_r3 = loop.for %k = 0 to 16 reduce(max, max, max, max) -> (f32, f32, f32, f32) {
// CHECK-COUNT-4: loop.load %x_b
// CHECK-NOT:   loop.load %w_b
// CHECK:       loop.store %m_r0, %y_b[%a0_r0, %a1]
// CHECK-COUNT-3: loop.store

// Neither 7 nor 5 is a multiple of 4: the kernel is left as it is.
func.func @odd(%x: tensor<7x16xf32>, %w: tensor<16x5xf32>) -> tensor<7x5xf32> {
  %y = tile.kernel @k_odd axes(%a0 : 7 = free, %a1 : 5 = free) ins(%x_b = %x : tensor<7x16xf32>, %w_b = %w : tensor<16x5xf32>) outs(%y_b : tensor<7x5xf32>) {
    %acc = loop.for %k = 0 to 16 reduce(add) -> f32 {
      %xv = loop.load %x_b[%a0, %k] : memref<7x16xf32>
      %wv = loop.load %w_b[%k, %a1] : memref<16x5xf32>
      %p = arith.mulf %xv, %wv : f32
      loop.yield %p : f32
    }
    loop.store %acc, %y_b[%a0, %a1] : memref<7x5xf32>
  }
  func.return %y : tensor<7x5xf32>
}

// CHECK-LABEL: func.func @odd
// CHECK:       tile.kernel @k_odd axes(%a0 : 7 = free, %a1 : 5 = free)
// CHECK-NOT:   schedule
// CHECK:       %acc = loop.for %k = 0 to 16 reduce(add) -> f32 {

// A row reduction reads elements of its own row only (not a contraction): nothing to reuse.
func.func @row_sum(%x: tensor<8x8x64xf32>) -> tensor<8x8xf32> {
  %y = tile.kernel @k_sum axes(%a0 : 8 = free, %a1 : 8 = free) ins(%x_b = %x : tensor<8x8x64xf32>) outs(%y_b : tensor<8x8xf32>) {
    %s = loop.for %k = 0 to 64 reduce(add) -> f32 {
      %v = loop.load %x_b[%a0, %a1, %k] : memref<8x8x64xf32>
      loop.yield %v : f32
    }
    loop.store %s, %y_b[%a0, %a1] : memref<8x8xf32>
  }
  func.return %y : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @row_sum
// CHECK:       tile.kernel @k_sum axes(%a0 : 8 = free, %a1 : 8 = free)
// CHECK-NOT:   schedule
// CHECK:       %s = loop.for %k = 0 to 64 reduce(add) -> f32 {

// Already scheduled (a thread axis): register tiles are decided before the axes are placed.
func.func @placed(%x: tensor<8x16xf32>, %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %y = tile.kernel @k_placed axes(%a0 : 8 = block, %a1 : 8 = thread) ins(%x_b = %x : tensor<8x16xf32>, %w_b = %w : tensor<16x8xf32>) outs(%y_b : tensor<8x8xf32>) {
    %acc = loop.for %k = 0 to 16 reduce(add) -> f32 {
      %xv = loop.load %x_b[%a0, %k] : memref<8x16xf32>
      %wv = loop.load %w_b[%k, %a1] : memref<16x8xf32>
      %p = arith.mulf %xv, %wv : f32
      loop.yield %p : f32
    }
    loop.store %acc, %y_b[%a0, %a1] : memref<8x8xf32>
  }
  func.return %y : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @placed
// CHECK:       tile.kernel @k_placed axes(%a0 : 8 = block, %a1 : 8 = thread)
// CHECK-NOT:   schedule
// CHECK:       %acc = loop.for %k = 0 to 16 reduce(add) -> f32 {
