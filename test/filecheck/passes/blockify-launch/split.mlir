// RUN: deplo-opt %s -p blockify-launch | filecheck %s

// An elementwise map over (1, 128, 5632): the innermost axis is split into 22 blocks of
// 256 threads (5632 = 22 * 256, no guard); the outer axes are blocks.

func.func @elementwise(%x: tensor<1x128x5632xf32>) -> tensor<1x128x5632xf32> {
  %y = tile.kernel @k_silu axes(%a0 : 1 = free, %a1 : 128 = free, %a2 : 5632 = free) ins(%xb = %x : tensor<1x128x5632xf32>) outs(%yb : tensor<1x128x5632xf32>) {
    %v = loop.load %xb[%a0, %a1, %a2] : memref<1x128x5632xf32>
    %n = arith.negf %v : f32
    %e = math.exp %n : f32
    %one = arith.constant 1.0 : f32
    %d = arith.addf %e, %one : f32
    %o = arith.divf %v, %d : f32
    loop.store %o, %yb[%a0, %a1, %a2] : memref<1x128x5632xf32>
  }
  func.return %y : tensor<1x128x5632xf32>
}

// CHECK-LABEL: func.func @elementwise
// CHECK:       tile.kernel @k_silu axes(%a0 : 1 = block, %a1 : 128 = block, %a2_b : 22 = block, %a2_t : 256 = thread)
// CHECK-NEXT:    %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 256) + d1))> (%a2_b, %a2_t)
// CHECK-NEXT:    %v = loop.load %xb[%a0, %a1, %a2] : memref<1x128x5632xf32>

// Less work than a block: exactly that many threads, one block, no guard.
func.func @small(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = tile.kernel @k_small axes(%a0 : 3 = free, %a1 : 5 = free) ins(%xb = %x : tensor<3x5xf32>) outs(%yb : tensor<3x5xf32>) {
    %v = loop.load %xb[%a0, %a1] : memref<3x5xf32>
    loop.store %v, %yb[%a0, %a1] : memref<3x5xf32>
  }
  func.return %y : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @small
// CHECK:       tile.kernel @k_small axes(%a0 : 3 = thread, %a1 : 5 = thread)
