// RUN: deplo-opt %s -p vectorize | filecheck %s
// RUN: deplo-opt %s -p "vectorize{widths=1}" | filecheck %s --check-prefix=OFF

// RMSNorm's normalising loop: x, the weight and the output are all contiguous in %a, so
// each thread takes four elements at a time (16-byte loads and stores once emitted).
func.func @contiguous(%x: tensor<32x2048xf32>, %w: tensor<2048xf32>) -> tensor<32x2048xf32> {
  %y = tile.kernel @k_norm axes(%t : 256 = thread, %b : 32 = block) ins(%xb = %x : tensor<32x2048xf32>, %wb = %w : tensor<2048xf32>) outs(%yb : tensor<32x2048xf32>) {
    tile.strided_for %a = %t to 2048 step 256 {
      %v = loop.load %xb[%b, %a] : memref<32x2048xf32>
      %g = loop.load %wb[%a] : memref<2048xf32>
      %o = arith.mulf %v, %g : f32
      loop.store %o, %yb[%b, %a] : memref<32x2048xf32>
    }
  }
  func.return %y : tensor<32x2048xf32>
}

// CHECK-LABEL: func.func @contiguous
// CHECK:       tile.strided_for %a = %t to 2048 step 256 vector 4 {
// OFF-LABEL:   func.func @contiguous
// OFF:         tile.strided_for %a = %t to 2048 step 256 {

// RoPE's rotate-half reads x[(%a + 32) mod 64]: an aligned group of four stays together
// under the mod, so it is as wide as the plain read.
func.func @rotate_half(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %y = tile.kernel @k_rot axes(%t : 64 = thread, %b : 16 = block) ins(%xb = %x : tensor<16x64xf32>) outs(%yb : tensor<16x64xf32>) {
    tile.strided_for %a = %t to 64 step 64 {
      %v = loop.load %xb[%b, %a] : memref<16x64xf32>
      %r = loop.load %xb[%b, (%a + 32) mod 64] : memref<16x64xf32>
      %o = arith.addf %v, %r : f32
      loop.store %o, %yb[%b, %a] : memref<16x64xf32>
    }
  }
  func.return %y : tensor<16x64xf32>
}

// CHECK-LABEL: func.func @rotate_half
// CHECK:       tile.strided_for %a = %t to 64 step 64 vector 4 {

// A transposed read strides by a row per element: it would stay scalar and lose its
// coalescing, so the loop is left alone.
func.func @transposed(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %y = tile.kernel @k_t axes(%t : 64 = thread, %b : 64 = block) ins(%xb = %x : tensor<64x64xf32>) outs(%yb : tensor<64x64xf32>) {
    tile.strided_for %a = %t to 64 step 64 {
      %v = loop.load %xb[%a, %b] : memref<64x64xf32>
      loop.store %v, %yb[%b, %a] : memref<64x64xf32>
    }
  }
  func.return %y : tensor<64x64xf32>
}

// CHECK-LABEL: func.func @transposed
// CHECK:       tile.strided_for %a = %t to 64 step 64 {

// An offset that is not a multiple of four (a slice starting at column 2) breaks the
// 16-byte alignment: scalar.
func.func @misaligned(%x: tensor<8x66xf32>) -> tensor<8x64xf32> {
  %y = tile.kernel @k_m axes(%t : 64 = thread, %b : 8 = block) ins(%xb = %x : tensor<8x66xf32>) outs(%yb : tensor<8x64xf32>) {
    tile.strided_for %a = %t to 64 step 64 {
      %v = loop.load %xb[%b, %a + 2] : memref<8x66xf32>
      loop.store %v, %yb[%b, %a] : memref<8x64xf32>
    }
  }
  func.return %y : tensor<8x64xf32>
}

// CHECK-LABEL: func.func @misaligned
// CHECK:       tile.strided_for %a = %t to 64 step 64 {
