// RUN: deplo-opt %s -p tileify | filecheck %s
// RUN: deplo-opt %s -p 'tileify{depth=1}' | filecheck %s --check-prefix=DEPTH

// relu(matmul(x + b, w)): both free loops (M, N) of the perfect nest become axes; the K
// reduce with its prologue (the bias add) and the epilogue (relu, store) stay the body.
// With depth=1 only M is lifted and N stays a serial loop in each thread.

func.func @forward(%x: tensor<16x64xf32>, %bias: tensor<64xf32>, %w: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %y = loop.kernel @k_relu ins(%xb = %x : tensor<16x64xf32>, %bb = %bias : tensor<64xf32>, %wb = %w : tensor<64x16xf32>) outs(%yb : tensor<16x16xf32>) {
    loop.for %a0 = 0 to 16 {
      loop.for %a1 = 0 to 16 {
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
    }
  }
  func.return %y : tensor<16x16xf32>
}

// CHECK:      %y = tile.kernel @k_relu axes(%a0 : 16 = free, %a1 : 16 = free) ins(%xb = %x : tensor<16x64xf32>, %bb = %bias : tensor<64xf32>, %wb = %w : tensor<64x16xf32>) outs(%yb : tensor<16x16xf32>) {
// CHECK-NEXT:   %acc = loop.for %a2 = 0 to 64 reduce(add) -> f32 {
// CHECK-NEXT:     %b = loop.load %bb[%a2] : memref<64xf32>
// CHECK-NEXT:     %xv = loop.load %xb[%a0, %a2] : memref<16x64xf32>
// CHECK-NEXT:     %wv = loop.load %wb[%a2, %a1] : memref<64x16xf32>
// CHECK-NEXT:     %s = arith.addf %xv, %b : f32
// CHECK-NEXT:     %p = arith.mulf %s, %wv : f32
// CHECK-NEXT:     loop.yield %p : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %r = arith.maximumf %acc, %zero : f32
// CHECK-NEXT:   loop.store %r, %yb[%a0, %a1] : memref<16x16xf32>
// CHECK-NEXT: }

// DEPTH:      tile.kernel @k_relu axes(%a0 : 16 = free)
// DEPTH-NEXT:   loop.for %a1 = 0 to 16 {
// DEPTH-NEXT:     %acc = loop.for %a2 = 0 to 64 reduce(add) -> f32 {
