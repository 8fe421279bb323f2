// RUN: not deplo-opt %s -p materialize --split-input-file 2>&1 | filecheck %s

// A combine needs its threads to be consecutive lanes: the innermost thread axis.
func.func @not_innermost(%x: tensor<64x4xf32>) -> tensor<4xf32> {
  %y = tile.kernel @k_outer axes(%t : 64 = thread, %c : 4 = thread) ins(%xb = %x : tensor<64x4xf32>) outs(%yb : tensor<4xf32>) {
    %p = tile.strided_for %k = %t to 64 step 64 reduce(add) -> f32 {
      %v = loop.load %xb[%k, %c] : memref<64x4xf32>
      loop.yield %v : f32
    }
    %s = tile.combine add %p across %t : f32
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      loop.store %s, %yb[%c] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK-NOT: Traceback
// CHECK:     error: materialize: tile.combine across a thread axis that is not the innermost one (its threads are not consecutive lanes)
