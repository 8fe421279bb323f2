// RUN: deplo-opt %s -p blockify-launch | filecheck %s
// RUN: deplo-opt %s -p blockify-launch,blockify-launch | filecheck %s
// RUN: deplo-opt %s -p 'blockify-launch{block_threads=64}' | filecheck %s --check-prefix=B64

// 16 x 16 outputs fill one block of 256 threads exactly; each thread runs the K loop.
// With 64 threads a block, N (16) is threads whole and M is split: 4 blocks of 4 rows.

func.func @forward(%x: tensor<16x64xf32>, %w: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %y = tile.kernel @k_mm axes(%a0 : 16 = free, %a1 : 16 = free) ins(%xb = %x : tensor<16x64xf32>, %wb = %w : tensor<64x16xf32>) outs(%yb : tensor<16x16xf32>) {
    %acc = loop.for %a2 = 0 to 64 reduce(add) -> f32 {
      %xv = loop.load %xb[%a0, %a2] : memref<16x64xf32>
      %wv = loop.load %wb[%a2, %a1] : memref<64x16xf32>
      %p = arith.mulf %xv, %wv : f32
      loop.yield %p : f32
    }
    loop.store %acc, %yb[%a0, %a1] : memref<16x16xf32>
  }
  func.return %y : tensor<16x16xf32>
}

// CHECK:      tile.kernel @k_mm axes(%a0 : 16 = thread, %a1 : 16 = thread)
// CHECK-NEXT:   %acc = loop.for %a2 = 0 to 64 reduce(add) -> f32 {

// B64:      tile.kernel @k_mm axes(%a0_b : 4 = block, %a0_t : 4 = thread, %a1 : 16 = thread)
// B64-NEXT:   %a0 = affine.apply affine_map<(d0, d1) -> (((d0 * 4) + d1))> (%a0_b, %a0_t)
// B64-NEXT:   %acc = loop.for %a2 = 0 to 64 reduce(add) -> f32 {
// B64-NEXT:     %xv = loop.load %xb[%a0, %a2] : memref<16x64xf32>
