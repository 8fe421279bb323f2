// RUN: deplo-opt %s | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// A K-chunk slab filled by TMA (tma), whole and split into pieces of 32 floats (split 32:
// box [16, 64] stored as [2, 16, 32], loads indexing the pieces), and swizzled.

func.func @forward(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %s = loop.for %k = 0 to 8 reduce(add) -> f32 {
      %w = tile.stage %xb[%k * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<16x64xf32>
      %p = tile.stage %xb[%k * 16, 0] box [16, 64] buffers 2 tma split 32 : memref<128x64xf32> -> memref<2x16x32xf32>
      %q = tile.stage %xb[%k * 16, 0] box [16, 64] buffers 2 tma split 32 swizzle 128 : memref<128x64xf32> -> memref<2x16x32xf32>
      %a = loop.load %w[0, %t] : memref<16x64xf32>
      %b = loop.load %p[%t floordiv 32, 0, %t mod 32] : memref<2x16x32xf32>
      %c = arith.addf %a, %b : f32
      loop.yield %c : f32
    }
    loop.store %s, %yb[%t] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK:      %w = tile.stage %xb[%k * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<16x64xf32>
// CHECK-NEXT: %p = tile.stage %xb[%k * 16, 0] box [16, 64] buffers 2 tma split 32 : memref<128x64xf32> -> memref<2x16x32xf32>
// CHECK-NEXT: %q = tile.stage %xb[%k * 16, 0] box [16, 64] buffers 2 tma split 32 swizzle 128 : memref<128x64xf32> -> memref<2x16x32xf32>
