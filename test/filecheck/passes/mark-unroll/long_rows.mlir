// RUN: deplo-opt %s -p mark-unroll | filecheck %s
// RUN: deplo-opt %s -p 'mark-unroll{max_row_words=512}' | filecheck %s --check-prefix=WIDE

// Long loops are left to NVRTC unless sibling loops re-read the same buffer and a
// thread's loads over one of them pass max_row_words 32-bit words (128): two loops over
// the same 144 i64 (288 words) and a nest of 40 x 4 f32 loads (160 words) that a short
// loop re-reads are marked unroll 1; 100 f32 loads (100 words) stay unmarked, and so
// does a loop of 200 f32 loads that no sibling re-reads (a matmul's K loop).
func.func @forward(%i: tensor<144xi64>, %x: tensor<4x2048xf32>, %z: tensor<200xf32>) -> tensor<4x2048xf32> {
  %y = tile.kernel @k axes(%t : 256 = thread, %r : 4 = block) ins(%ib = %i : tensor<144xi64>, %xb = %x : tensor<4x2048xf32>, %zb = %z : tensor<200xf32>) outs(%yb : tensor<4x2048xf32>) {
    %m = loop.for %a = 0 to 144 reduce(max) -> i64 {
      %v = loop.load %ib[%a] : memref<144xi64>
      loop.yield %v : i64
    }
    %m2 = loop.for %a2 = 0 to 144 reduce(add) -> i64 {
      %v2 = loop.load %ib[%a2] : memref<144xi64>
      loop.yield %v2 : i64
    }
    %s = loop.for %b = 0 to 100 reduce(add) -> f32 {
      %w = loop.load %xb[%r, %b] : memref<4x2048xf32>
      loop.yield %w : f32
    }
    %n = loop.for %c = 0 to 40 reduce(add) -> f32 {
      %inner = loop.for %d = 0 to 4 reduce(add) -> f32 {
        %u = loop.load %xb[%d, %c] : memref<4x2048xf32>
        loop.yield %u : f32
      }
      loop.yield %inner : f32
    }
    %k = loop.for %e = 0 to 200 reduce(add) -> f32 {
      %q = loop.load %zb[%e] : memref<200xf32>
      loop.yield %q : f32
    }
  }
  func.return %y : tensor<4x2048xf32>
}

// CHECK:      %m = loop.for %a = 0 to 144 reduce(max) -> i64 unroll 1 {
// CHECK:      %m2 = loop.for %a2 = 0 to 144 reduce(add) -> i64 unroll 1 {
// CHECK:      %s = loop.for %b = 0 to 100 reduce(add) -> f32 {
// CHECK:      %n = loop.for %c = 0 to 40 reduce(add) -> f32 unroll 1 {
// CHECK:      loop.for %d = 0 to 4 reduce(add) -> f32 unroll 4 {
// CHECK:      %k = loop.for %e = 0 to 200 reduce(add) -> f32 {

// WIDE:       %m = loop.for %a = 0 to 144 reduce(max) -> i64 {
// WIDE:       %n = loop.for %c = 0 to 40 reduce(add) -> f32 {
