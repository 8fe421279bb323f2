// RUN: deplo-opt %s | filecheck %s
// RUN: deplo-opt %s | deplo-opt | filecheck %s

// Every loop op in its custom syntax, printed back as written: a kernel with inputs and
// outputs, free and reduce loops (one and two accumulators), affine index expressions,
// an affine.apply index, a rank-0 buffer, a kernel with no inputs, attributes.
func.func @forward(%x: tensor<1x32x64xf32>, %w: tensor<64xf32>, %s: tensor<f32>) -> (tensor<1x32x64xf32>, tensor<32xf32>, tensor<4xf32>) {
  %y = loop.kernel @k_rms_norm ins(%x_b = %x : tensor<1x32x64xf32>, %w_b = %w : tensor<64xf32>, %s_b = %s : tensor<f32>) outs(%y_b : tensor<1x32x64xf32>) attributes {covers = ["rms_norm"]} {
    %inv = arith.constant 1.562500e-02 : f32
    loop.for %a0 = 0 to 32 {
      %ss = loop.for %a1 = 0 to 64 reduce(add) -> f32 {
        %v = loop.load %x_b[0, %a0, %a1] : memref<1x32x64xf32>
        %q = arith.mulf %v, %v : f32
        loop.yield %q : f32
      }
      %m = arith.mulf %ss, %inv : f32
      %r = math.rsqrt %m : f32
      %g = loop.load %s_b[] : memref<f32>
      loop.for %a2 = 0 to 64 {
        %v2 = loop.load %x_b[0, %a0, %a2] : memref<1x32x64xf32>
        %wv = loop.load %w_b[%a2] : memref<64xf32>
        %t = arith.mulf %v2, %r : f32
        %o = arith.mulf %t, %wv : f32
        %p = arith.mulf %o, %g : f32
        loop.store %p, %y_b[0, %a0, %a2] : memref<1x32x64xf32>
      }
    }
  }
  %mm = loop.kernel @k_minmax ins(%x_b = %x : tensor<1x32x64xf32>) outs(%mm_b : tensor<32xf32>) {
    loop.for %a0 = 0 to 32 {
      %lo, %hi = loop.for %a1 = 0 to 32 reduce(min, max) -> (f32, f32) {
        %i = affine.apply affine_map<(d0) -> (d0 * 2 + 1)>(%a1)
        %v = loop.load %x_b[0, %a0, %i] : memref<1x32x64xf32>
        %u = loop.load %x_b[0, %a0, (%a1 * 2) mod 64] : memref<1x32x64xf32>
        loop.yield %v, %u : f32, f32
      }
      %d = arith.subf %hi, %lo : f32
      loop.store %d, %mm_b[%a0] : memref<32xf32>
    }
  }
  %c = loop.kernel @k_fill ins() outs(%c_b : tensor<4xf32>) {
    %one = arith.constant 1.000000e+00 : f32
    loop.for %a0 = 0 to 4 {
      loop.store %one, %c_b[%a0] : memref<4xf32>
    }
  }
  func.return %y, %mm, %c : tensor<1x32x64xf32>, tensor<32xf32>, tensor<4xf32>
}

// CHECK:      func.func @forward(%x: tensor<1x32x64xf32>, %w: tensor<64xf32>, %s: tensor<f32>) -> (tensor<1x32x64xf32>, tensor<32xf32>, tensor<4xf32>) {
// CHECK-NEXT:   %y = loop.kernel @k_rms_norm ins(%x_b = %x : tensor<1x32x64xf32>, %w_b = %w : tensor<64xf32>, %s_b = %s : tensor<f32>) outs(%y_b : tensor<1x32x64xf32>) attributes {covers = ["rms_norm"]} {
// CHECK-NEXT:     %inv = arith.constant 1.562500e-02 : f32
// CHECK-NEXT:     loop.for %a0 = 0 to 32 {
// CHECK-NEXT:       %ss = loop.for %a1 = 0 to 64 reduce(add) -> f32 {
// CHECK-NEXT:         %v = loop.load %x_b[0, %a0, %a1] : memref<1x32x64xf32>
// CHECK-NEXT:         %q = arith.mulf %v, %v : f32
// CHECK-NEXT:         loop.yield %q : f32
// CHECK-NEXT:       }
// CHECK-NEXT:       %m = arith.mulf %ss, %inv : f32
// CHECK-NEXT:       %r = math.rsqrt %m : f32
// CHECK-NEXT:       %g = loop.load %s_b[] : memref<f32>
// CHECK-NEXT:       loop.for %a2 = 0 to 64 {
// CHECK-NEXT:         %v2 = loop.load %x_b[0, %a0, %a2] : memref<1x32x64xf32>
// CHECK-NEXT:         %wv = loop.load %w_b[%a2] : memref<64xf32>
// CHECK-NEXT:         %t = arith.mulf %v2, %r : f32
// CHECK-NEXT:         %o = arith.mulf %t, %wv : f32
// CHECK-NEXT:         %p = arith.mulf %o, %g : f32
// CHECK-NEXT:         loop.store %p, %y_b[0, %a0, %a2] : memref<1x32x64xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   %mm = loop.kernel @k_minmax ins(%x_b = %x : tensor<1x32x64xf32>) outs(%mm_b : tensor<32xf32>) {
// CHECK-NEXT:     loop.for %a0 = 0 to 32 {
// CHECK-NEXT:       %lo, %hi = loop.for %a1 = 0 to 32 reduce(min, max) -> (f32, f32) {
// CHECK-NEXT:         %i = affine.apply affine_map<(d0) -> (((d0 * 2) + 1))> (%a1)
// CHECK-NEXT:         %v = loop.load %x_b[0, %a0, %i] : memref<1x32x64xf32>
// CHECK-NEXT:         %u = loop.load %x_b[0, %a0, %a1 * 2 mod 64] : memref<1x32x64xf32>
// CHECK-NEXT:         loop.yield %v, %u : f32, f32
// CHECK-NEXT:       }
// CHECK-NEXT:       %d = arith.subf %hi, %lo : f32
// CHECK-NEXT:       loop.store %d, %mm_b[%a0] : memref<32xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   %c = loop.kernel @k_fill ins() outs(%c_b : tensor<4xf32>) {
// CHECK-NEXT:     %one = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:     loop.for %a0 = 0 to 4 {
// CHECK-NEXT:       loop.store %one, %c_b[%a0] : memref<4xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %y, %mm, %c : tensor<1x32x64xf32>, tensor<32xf32>, tensor<4xf32>
// CHECK-NEXT: }
