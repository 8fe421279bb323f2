// RUN: deplo-opt %s -t cuda | filecheck %s

// A `vector 4` loop: the counter runs over groups of four (counted from 0 when every
// thread runs the same number, 2 here, so unrolled loops repeat the same addresses);
// contiguous accesses become one float4 load or store per group (loads before the four
// lanes, stores after), a broadcast
// read (%s, the same for every lane) and a transposed one stay scalar, and the reduction
// folds the four lanes in order.

builtin.module {
  func.func @forward(%x: tensor<32x2048xf32>, %w: tensor<2048x32xf32>) -> tensor<32x2048xf32> {
    %y = kernel.kernel @k_vec grid(32, 1, 1) block(256, 1, 1) ins(%xb = %x : tensor<32x2048xf32>, %wb = %w : tensor<2048x32xf32>) outs(%yb : tensor<32x2048xf32>) {
      %t = kernel.thread_id x
      %b = kernel.block_id x
      %s = kernel.for %a = %t to 2048 step 256 vector 4 reduce(add) -> f32 {
        %v = kernel.load %xb[%b, %a] : memref<32x2048xf32>
        kernel.yield %v : f32
      }
      kernel.for %a2 = %t to 2048 step 256 vector 4 {
        %v2 = kernel.load %xb[%b, %a2] : memref<32x2048xf32>
        %u = kernel.load %wb[%a2, %b] : memref<2048x32xf32>
        %o = arith.mulf %v2, %s : f32
        %p = arith.addf %o, %u : f32
        kernel.store %p, %yb[%b, %a2] : memref<32x2048xf32>
      }
    }
    func.return %y : tensor<32x2048xf32>
  }
}

// CHECK:      float s = 0.0f;
// CHECK-NEXT: for (int a_v4_j = 0; a_v4_j < 2; ++a_v4_j) {
// CHECK-NEXT:   const int a_v4 = t + a_v4_j * 256;
// CHECK-NEXT:   const int a_0 = 4 * a_v4;
// CHECK-NEXT:   const float4 v4 = *reinterpret_cast<const float4*>(&xb[b * 2048 + a_0]);
// CHECK-NEXT:   const float v = v4.x;
// CHECK-NEXT:   s = s + v;
// CHECK-NEXT:   const float v_1 = v4.y;
// CHECK-NEXT:   s = s + v_1;
// CHECK:        const float v_3 = v4.w;
// CHECK-NEXT:   s = s + v_3;
// CHECK-NEXT: }
// CHECK-NEXT: for (int a2_v4_j = 0; a2_v4_j < 2; ++a2_v4_j) {
// CHECK-NEXT:   const int a2_v4 = t + a2_v4_j * 256;
// CHECK-NEXT:   const int a2_0 = 4 * a2_v4;
// CHECK-NEXT:   const float4 v24 = *reinterpret_cast<const float4*>(&xb[b * 2048 + a2_0]);
// CHECK-NEXT:   float4 yb4;
// CHECK-NEXT:   const int a2 = a2_0;
// CHECK-NEXT:   const float v2 = v24.x;
// CHECK-NEXT:   const float u = wb[a2 * 32 + b];
// CHECK-NEXT:   const float o = v2 * s;
// CHECK-NEXT:   const float p = o + u;
// CHECK-NEXT:   yb4.x = p;
// CHECK-NEXT:   const int a2_1 = a2_0 + 1;
// CHECK-NEXT:   const float v2_1 = v24.y;
// CHECK-NEXT:   const float u_1 = wb[a2_1 * 32 + b];
// CHECK:        yb4.w = p_3;
// CHECK-NEXT:   *reinterpret_cast<float4*>(&yb[b * 2048 + a2_0]) = yb4;
// CHECK-NEXT: }
