// RUN: deplo-opt %s -t cuda | filecheck %s

// A buffer of 2^31 elements or more is indexed in long long; so is an index whose range
// does not fit in int. A guarded split axis prints as its flat index and the modulo that
// the verifier needs (a no-op under the guard).

func.func @forward(%x: tensor<3x1000000000xf32>) -> tensor<3x1000000000xf32> {
  %y = kernel.kernel @k_wide grid(11718750, 1, 1) block(256, 1, 1) ins(%xb = %x : tensor<3x1000000000xf32>) outs(%yb : tensor<3x1000000000xf32>) {
    %t = kernel.thread_id x
    %b = kernel.block_id x
    %flat = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)> (%b, %t)
    %c3e9 = arith.constant 3000000000 : index
    %in_range = arith.cmpi ult, %flat, %c3e9 : index
    scf.if %in_range {
      %i = affine.apply affine_map<(d0) -> (d0 mod 3000000000)> (%flat)
      %row = affine.apply affine_map<(d0) -> (d0 floordiv 1000000000)> (%i)
      %col = affine.apply affine_map<(d0) -> (d0 mod 1000000000)> (%i)
      %v = kernel.load %xb[%row, %col] : memref<3x1000000000xf32>
      %s = math.sin %v : f32
      kernel.store %s, %yb[%row, %col] : memref<3x1000000000xf32>
    }
  }
  func.return %y : tensor<3x1000000000xf32>
}

// CHECK:      const int t = threadIdx.x;
// CHECK-NEXT: const int b = blockIdx.x;
// CHECK-NEXT: const long long flat = (long long)b * 256 + (long long)t;
// CHECK-NEXT: const bool in_range = flat < 3000000000LL;
// CHECK-NEXT: if (in_range) {
// CHECK-NEXT:   const long long i = flat % 3000000000;
// CHECK-NEXT:   const int row = i / 1000000000;
// CHECK-NEXT:   const int col = i % 1000000000;
// CHECK-NEXT:   const float v = xb[(long long)row * 1000000000 + (long long)col];
// CHECK-NEXT:   const float s = sinf(v);
// CHECK-NEXT:   yb[(long long)row * 1000000000 + (long long)col] = s;
// CHECK-NEXT: }
