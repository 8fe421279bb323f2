// RUN: deplo-opt %s -p cooperative-reduce | filecheck %s
// RUN: deplo-opt %s -p 'cooperative-reduce{threads=16 force=true}' | filecheck %s --check-prefix=FORCE

// K = 64 over 256 independent outputs: cooperation does not pay, nothing changes. Forced,
// with 16 threads, the K loop is dealt out and combined.

func.func @forward(%x: tensor<16x64xf32>, %bias: tensor<64xf32>, %w: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %y = tile.kernel @k_relu axes(%a0 : 16 = free, %a1 : 16 = free) ins(%xb = %x : tensor<16x64xf32>, %bb = %bias : tensor<64xf32>, %wb = %w : tensor<64x16xf32>) outs(%yb : tensor<16x16xf32>) {
    %acc = loop.for %a2 = 0 to 64 reduce(add) -> f32 {
      %b = loop.load %bb[%a2] : memref<64xf32>
      %xv = loop.load %xb[%a0, %a2] : memref<16x64xf32>
      %wv = loop.load %wb[%a2, %a1] : memref<64x16xf32>
      %s = arith.addf %xv, %b : f32
      %p = arith.mulf %s, %wv : f32
      loop.yield %p : f32
    }
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %acc, %zero : f32
    loop.store %r, %yb[%a0, %a1] : memref<16x16xf32>
  }
  func.return %y : tensor<16x16xf32>
}

// CHECK:      tile.kernel @k_relu axes(%a0 : 16 = free, %a1 : 16 = free)
// CHECK-NEXT:   %acc = loop.for %a2 = 0 to 64 reduce(add) -> f32 {

// FORCE:      tile.kernel @k_relu axes(%t : 16 = thread, %a0 : 16 = free, %a1 : 16 = free)
// FORCE:        %acc_part = tile.strided_for %a2 = %t to 64 step 16 reduce(add) -> f32 {
// FORCE:        %acc = tile.combine add %acc_part across %t : f32
// FORCE:        %r = arith.maximumf %acc, %zero : f32
// FORCE-NEXT:   scf.if %first {
// FORCE-NEXT:     loop.store %r, %yb[%a0, %a1] : memref<16x16xf32>
// FORCE-NEXT:   }
