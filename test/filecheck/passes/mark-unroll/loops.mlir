// RUN: deplo-opt %s -p mark-unroll | filecheck %s
// RUN: deplo-opt %s -p mark-unroll,mark-unroll | filecheck %s
// RUN: deplo-opt %s -p mark-unroll | deplo-opt | filecheck %s
// RUN: deplo-opt %s -p 'mark-unroll{max_trips=4}' | filecheck %s --check-prefix=BOUND

// A strided loop of 8 steps per thread and a 4-element inner loop unroll; a loop of 64
// iterations stays rolled. Running the pass twice changes nothing.
func.func @forward(%x: tensor<4x2048xf32>) -> tensor<4x2048xf32> {
  %y = tile.kernel @k axes(%t : 256 = thread, %r : 4 = block) ins(%xb = %x : tensor<4x2048xf32>) outs(%yb : tensor<4x2048xf32>) {
    tile.strided_for %j = %t to 2048 step 256 {
      %v = loop.load %xb[%r, %j] : memref<4x2048xf32>
      loop.store %v, %yb[%r, %j] : memref<4x2048xf32>
    }
    %s = loop.for %k = 0 to 4 reduce(add) -> f32 {
      %w = loop.load %xb[%r, %k] : memref<4x2048xf32>
      loop.yield %w : f32
    }
    %m = loop.for %k2 = 0 to 64 reduce(max) -> f32 {
      %w2 = loop.load %xb[%r, %k2] : memref<4x2048xf32>
      loop.yield %w2 : f32
    }
  }
  func.return %y : tensor<4x2048xf32>
}

// CHECK:      tile.strided_for %j = %t to 2048 step 256 unroll 8 {
// CHECK:      %s = loop.for %k = 0 to 4 reduce(add) -> f32 unroll 4 {
// CHECK:      %m = loop.for %k2 = 0 to 64 reduce(max) -> f32 {

// BOUND:      tile.strided_for %j = %t to 2048 step 256 {
// BOUND:      %s = loop.for %k = 0 to 4 reduce(add) -> f32 unroll 4 {
