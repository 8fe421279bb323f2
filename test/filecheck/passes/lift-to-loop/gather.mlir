// RUN: deplo-opt %s -p lift-to-loop | filecheck %s
// RUN: deplo-opt %s -p lift-to-loop,fuse | filecheck %s --check-prefix=FUSED

// ten.gather: a load of the index, cast to index, and a load of the table with that
// value as the gathered axis's index: the one load whose index is data.

// CHECK-LABEL: func.func @embedding
// CHECK:         %e = loop.kernel @k_e ins(%table_b = %table : tensor<16x8xf32>, %ids_b = %ids : tensor<2x3xi64>) outs(%e_b : tensor<2x3x8xf32>)
// CHECK-NEXT:      loop.for %a0 = 0 to 2 {
// CHECK-NEXT:        loop.for %a1 = 0 to 3 {
// CHECK-NEXT:          loop.for %a2 = 0 to 8 {
// CHECK-NEXT:            %id = loop.load %ids_b[%a0, %a1] : memref<2x3xi64>
// CHECK-NEXT:            %row = arith.index_cast %id : i64 to index
// CHECK-NEXT:            %in = loop.load %table_b[%row, %a2] : memref<16x8xf32>
// CHECK-NEXT:            loop.store %in, %e_b[%a0, %a1, %a2] : memref<2x3x8xf32>
func.func @embedding(%table: tensor<16x8xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x8xf32> {
  %e = ten.gather %table[%ids] axis 0 : tensor<16x8xf32>, tensor<2x3xi64> -> tensor<2x3x8xf32>
  func.return %e : tensor<2x3x8xf32>
}

// A gather on a middle axis: leading and trailing axes index the table directly.
// CHECK-LABEL: func.func @middle
// CHECK:                 %id = loop.load %ids_b[%a1] : memref<4xi32>
// CHECK-NEXT:            %row = arith.index_cast %id : i32 to index
// CHECK-NEXT:            %in = loop.load %x_b[%a0, %row, %a2] : memref<3x5x2xf32>
// CHECK-NEXT:            loop.store %in, %g_b[%a0, %a1, %a2] : memref<3x4x2xf32>
func.func @middle(%x: tensor<3x5x2xf32>, %ids: tensor<4xi32>) -> tensor<3x4x2xf32> {
  %g = ten.gather %x[%ids] axis 1 : tensor<3x5x2xf32>, tensor<4xi32> -> tensor<3x4x2xf32>
  func.return %g : tensor<3x4x2xf32>
}

// An embedding feeding an RMSNorm: the row lookup moves into the norm's kernel (into
// both its loops), the id loaded once per row, outside the loops over the hidden axis.
// FUSED-LABEL: func.func @embedding_rms_norm
// FUSED:         %y = loop.kernel @k_y ins(%w_b = %w : tensor<16x8xf32>, %ids_b = %ids : tensor<2x3xi64>, %g_b = %g : tensor<8xf32>)
// FUSED-NOT:     loop.kernel
// FUSED:         loop.for %a0 = 0 to 2 {
// FUSED-NEXT:      loop.for %a1 = 0 to 3 {
// FUSED-NEXT:        %id = loop.load %ids_b[%a0, %a1] : memref<2x3xi64>
// FUSED-NEXT:        %row = arith.index_cast %id : i64 to index
// FUSED-NEXT:        %ss = loop.for %a2 = 0 to 8 reduce(add) -> f32 {
// FUSED-NEXT:          %{{.*}} = loop.load %w_b[%row, %a2] : memref<16x8xf32>
// FUSED:             loop.for %a3 = 0 to 8 {
// FUSED-NEXT:          %{{.*}} = loop.load %w_b[%row, %a3] : memref<16x8xf32>
func.func @embedding_rms_norm(%w: tensor<16x8xf32>, %ids: tensor<2x3xi64>, %g: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %e = ten.gather %w[%ids] axis 0 : tensor<16x8xf32>, tensor<2x3xi64> -> tensor<2x3x8xf32>
  %sq = ten.map(%e) : tensor<2x3x8xf32> -> tensor<2x3x8xf32> {
  ^bb0(%a: f32):
    %m = arith.mulf %a, %a : f32
    ten.yield %m : f32
  }
  %ss = ten.reduce add %sq dims [2] : tensor<2x3x8xf32> -> tensor<2x3xf32>
  %r = ten.map(%ss) : tensor<2x3xf32> -> tensor<2x3xf32> {
  ^bb0(%a: f32):
    %inv = arith.constant 1.250000e-01 : f32
    %eps = arith.constant 1.0e-06 : f32
    %m = arith.mulf %a, %inv : f32
    %e2 = arith.addf %m, %eps : f32
    %q = math.rsqrt %e2 : f32
    ten.yield %q : f32
  }
  %rb = ten.index_map %r (d0, d1, d2) -> (d0, d1) : tensor<2x3xf32> -> tensor<2x3x8xf32>
  %gb = ten.index_map %g (d0, d1, d2) -> (d2) : tensor<8xf32> -> tensor<2x3x8xf32>
  %y = ten.map(%e, %rb, %gb) : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %n = arith.mulf %m, %c : f32
    ten.yield %n : f32
  }
  func.return %y : tensor<2x3x8xf32>
}
