// RUN: deplo-opt %s -p materialize | filecheck %s

// Two thread axes share threadIdx.x row-major (N fastest, so a warp reads a row of w);
// loop.for becomes kernel.for from a constant start with step 1.

func.func @forward(%x: tensor<16x64xf32>, %w: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %y = tile.kernel @k_mm axes(%a0 : 16 = thread, %a1 : 16 = thread) ins(%xb = %x : tensor<16x64xf32>, %wb = %w : tensor<64x16xf32>) outs(%yb : tensor<16x16xf32>) {
    %acc = loop.for %a2 = 0 to 64 reduce(add) -> f32 {
      %xv = loop.load %xb[%a0, %a2] : memref<16x64xf32>
      %wv = loop.load %wb[%a2, %a1] : memref<64x16xf32>
      %p = arith.mulf %xv, %wv : f32
      loop.yield %p : f32
    }
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %acc, %zero : f32
    loop.store %r, %yb[%a0, %a1] : memref<16x16xf32>
  }
  func.return %y : tensor<16x16xf32>
}

// CHECK:      kernel.kernel @k_mm grid(1, 1, 1) block(256, 1, 1)
// CHECK-NEXT:   %tid = kernel.thread_id x
// CHECK-NEXT:   %a0 = affine.apply affine_map<(d0) -> ((d0 floordiv 16))> (%tid)
// CHECK-NEXT:   %a1 = affine.apply affine_map<(d0) -> ((d0 mod 16))> (%tid)
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %acc = kernel.for %a2 = %c0 to 64 step 1 reduce(add) -> f32 {
// CHECK-NEXT:     %xv = kernel.load %xb[%a0, %a2] : memref<16x64xf32>
// CHECK-NEXT:     %wv = kernel.load %wb[%a2, %a1] : memref<64x16xf32>
// CHECK-NEXT:     %p = arith.mulf %xv, %wv : f32
// CHECK-NEXT:     kernel.yield %p : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %r = arith.maximumf %acc, %zero : f32
// CHECK-NEXT:   kernel.store %r, %yb[%a0, %a1] : memref<16x16xf32>
// CHECK-NEXT: }
