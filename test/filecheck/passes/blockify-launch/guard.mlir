// RUN: deplo-opt %s -p blockify-launch | filecheck %s

// 1000 is not a multiple of 256: 4 blocks of 256 cover 1024 and the body is guarded. Under
// the guard the index is re-derived modulo 1000 (the same value there) so that the
// verifier's range check, which does not see the guard, proves the accesses in bounds.

func.func @forward(%x: tensor<7x1000xf32>) -> tensor<7x1000xf32> {
  %y = tile.kernel @k_tanh axes(%a0 : 7 = free, %a1 : 1000 = free) ins(%xb = %x : tensor<7x1000xf32>) outs(%yb : tensor<7x1000xf32>) {
    %v = loop.load %xb[%a0, %a1] : memref<7x1000xf32>
    %o = math.tanh %v : f32
    loop.store %o, %yb[%a0, %a1] : memref<7x1000xf32>
  }
  func.return %y : tensor<7x1000xf32>
}

// CHECK:      tile.kernel @k_tanh axes(%a0 : 7 = block, %a1_b : 4 = block, %a1_t : 256 = thread)
// CHECK-NEXT:   %a1_flat = affine.apply affine_map<(d0, d1) -> (((d0 * 256) + d1))> (%a1_b, %a1_t)
// CHECK-NEXT:   %c1000 = arith.constant 1000 : index
// CHECK-NEXT:   %in_range = arith.cmpi ult, %a1_flat, %c1000 : index
// CHECK-NEXT:   scf.if %in_range {
// CHECK-NEXT:     %a1 = affine.apply affine_map<(d0) -> ((d0 mod 1000))> (%a1_flat)
// CHECK-NEXT:     %v = loop.load %xb[%a0, %a1] : memref<7x1000xf32>
// CHECK-NEXT:     %o = math.tanh %v : f32
// CHECK-NEXT:     loop.store %o, %yb[%a0, %a1] : memref<7x1000xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
