// RUN: deplo-opt %s -p cooperative-reduce | filecheck %s

// A 64-long row is shared by a warp (32 threads, two elements each). The loop's two
// accumulators get a combine each; the stores of the results, which every
// thread would repeat, are guarded so that thread 0 alone writes.

func.func @forward(%x: tensor<4x64xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %m, %q = tile.kernel @k_moments axes(%a0 : 4 = free) ins(%xb = %x : tensor<4x64xf32>) outs(%mb : tensor<4xf32>, %qb : tensor<4xf32>) {
    %s, %ss = loop.for %a1 = 0 to 64 reduce(add, add) -> (f32, f32) {
      %v = loop.load %xb[%a0, %a1] : memref<4x64xf32>
      %v2 = arith.mulf %v, %v : f32
      loop.yield %v, %v2 : f32, f32
    }
    %n = arith.constant 0.015625 : f32
    %mean = arith.mulf %s, %n : f32
    %msq = arith.mulf %ss, %n : f32
    loop.store %mean, %mb[%a0] : memref<4xf32>
    loop.store %msq, %qb[%a0] : memref<4xf32>
  }
  func.return %m, %q : tensor<4xf32>, tensor<4xf32>
}

// CHECK:      tile.kernel @k_moments axes(%t : 32 = thread, %a0 : 4 = free)
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %first = arith.cmpi eq, %t, %c0 : index
// CHECK-NEXT:   %s_part, %ss_part = tile.strided_for %a1 = %t to 64 step 32 reduce(add, add) -> (f32, f32) {
// CHECK:        }
// CHECK-NEXT:   %s = tile.combine add %s_part across %t : f32
// CHECK-NEXT:   %ss = tile.combine add %ss_part across %t : f32
// CHECK:        %msq = arith.mulf %ss, %n : f32
// CHECK-NEXT:   scf.if %first {
// CHECK-NEXT:     loop.store %mean, %mb[%a0] : memref<4xf32>
// CHECK-NEXT:     loop.store %msq, %qb[%a0] : memref<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
