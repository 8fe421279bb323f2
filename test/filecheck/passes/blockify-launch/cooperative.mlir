// RUN: deplo-opt %s -p blockify-launch | filecheck %s

// A kernel whose rows already have a block of threads: one block per row.

func.func @forward(%x: tensor<1x32x2048xf32>) -> tensor<1x32xf32> {
  %y = tile.kernel @k_row_sum axes(%t : 256 = thread, %a0 : 1 = free, %a1 : 32 = free) ins(%xb = %x : tensor<1x32x2048xf32>) outs(%yb : tensor<1x32xf32>) {
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    %p = tile.strided_for %a2 = %t to 2048 step 256 reduce(add) -> f32 {
      %v = loop.load %xb[%a0, %a1, %a2] : memref<1x32x2048xf32>
      loop.yield %v : f32
    }
    %s = tile.combine add %p across %t : f32
    scf.if %first {
      loop.store %s, %yb[%a0, %a1] : memref<1x32xf32>
    }
  }
  func.return %y : tensor<1x32xf32>
}

// CHECK:      tile.kernel @k_row_sum axes(%t : 256 = thread, %a0 : 1 = block, %a1 : 32 = block)
// CHECK-NEXT:   %c0 = arith.constant 0 : index
