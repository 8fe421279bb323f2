// RUN: deplo-opt %s -p cooperative-reduce | filecheck %s
// RUN: deplo-opt %s -p cooperative-reduce,cooperative-reduce | filecheck %s

// A 2048-long row is worth a block: a thread axis of 256 is added, the reduce loop is
// dealt out over it and its partial sums combined; the normalising loop is dealt out too.
// The second RUN line: the pass is idempotent.

func.func @forward(%x: tensor<1x32x2048xf32>, %p_weight: tensor<2048xf32>) -> tensor<1x32x2048xf32> {
  %y = tile.kernel @k_rms_norm axes(%a0 : 32 = free) ins(%xb = %x : tensor<1x32x2048xf32>, %wb = %p_weight : tensor<2048xf32>) outs(%yb : tensor<1x32x2048xf32>) {
    %ss = loop.for %a1 = 0 to 2048 reduce(add) -> f32 {
      %v = loop.load %xb[0, %a0, %a1] : memref<1x32x2048xf32>
      %q = arith.mulf %v, %v : f32
      loop.yield %q : f32
    }
    %n = arith.constant 4.8828125e-04 : f32
    %m = arith.mulf %ss, %n : f32
    %eps = arith.constant 1.0e-06 : f32
    %s = arith.addf %m, %eps : f32
    %r = math.rsqrt %s : f32
    loop.for %a2 = 0 to 2048 {
      %v2 = loop.load %xb[0, %a0, %a2] : memref<1x32x2048xf32>
      %w = loop.load %wb[%a2] : memref<2048xf32>
      %t = arith.mulf %v2, %r : f32
      %o = arith.mulf %t, %w : f32
      loop.store %o, %yb[0, %a0, %a2] : memref<1x32x2048xf32>
    }
  }
  func.return %y : tensor<1x32x2048xf32>
}

// CHECK:      %y = tile.kernel @k_rms_norm axes(%t : 256 = thread, %a0 : 32 = free) ins(%xb = %x : tensor<1x32x2048xf32>, %wb = %p_weight : tensor<2048xf32>) outs(%yb : tensor<1x32x2048xf32>) {
// CHECK-NEXT:   %ss_part = tile.strided_for %a1 = %t to 2048 step 256 reduce(add) -> f32 {
// CHECK-NEXT:     %v = loop.load %xb[0, %a0, %a1] : memref<1x32x2048xf32>
// CHECK-NEXT:     %q = arith.mulf %v, %v : f32
// CHECK-NEXT:     loop.yield %q : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %ss = tile.combine add %ss_part across %t : f32
// CHECK-NEXT:   %n = arith.constant 0.00048828125 : f32
// CHECK-NEXT:   %m = arith.mulf %ss, %n : f32
// CHECK-NEXT:   %eps = arith.constant 1.000000e-06 : f32
// CHECK-NEXT:   %s = arith.addf %m, %eps : f32
// CHECK-NEXT:   %r = math.rsqrt %s : f32
// CHECK-NEXT:   tile.strided_for %a2 = %t to 2048 step 256 {
// CHECK-NEXT:     %v2 = loop.load %xb[0, %a0, %a2] : memref<1x32x2048xf32>
// CHECK-NEXT:     %w = loop.load %wb[%a2] : memref<2048xf32>
// CHECK-NEXT:     %t_1 = arith.mulf %v2, %r : f32
// CHECK-NEXT:     %o = arith.mulf %t_1, %w : f32
// CHECK-NEXT:     loop.store %o, %yb[0, %a0, %a2] : memref<1x32x2048xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
