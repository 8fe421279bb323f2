// RUN: deplo-opt %s -p lift-to-loop | filecheck %s

// ten.index_map: free loops over the result, one load at the view's map of the ivs.

// CHECK-LABEL: func.func @broadcast
// CHECK:         %wb = loop.kernel @k_wb ins(%w_b = %w : tensor<8xf32>) outs(%wb_b : tensor<1x4x8xf32>)
// CHECK-NEXT:      loop.for %a0 = 0 to 4 {
// CHECK-NEXT:        loop.for %a1 = 0 to 8 {
// CHECK-NEXT:          %in = loop.load %w_b[%a1] : memref<8xf32>
// CHECK-NEXT:          loop.store %in, %wb_b[0, %a0, %a1] : memref<1x4x8xf32>
func.func @broadcast(%w: tensor<8xf32>) -> tensor<1x4x8xf32> {
  %wb = ten.index_map %w (d0, d1, d2) -> (d2) : tensor<8xf32> -> tensor<1x4x8xf32>
  func.return %wb : tensor<1x4x8xf32>
}

// CHECK-LABEL: func.func @transpose
// CHECK:           %in = loop.load %x_b[%a1, %a0] : memref<8x4xf32>
// CHECK-NEXT:      loop.store %in, %t_b[%a0, %a1] : memref<4x8xf32>
func.func @transpose(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %t = ten.index_map %x (d0, d1) -> (d1, d0) : tensor<8x4xf32> -> tensor<4x8xf32>
  func.return %t : tensor<4x8xf32>
}

// A reshape and a slice: the map's floordiv/mod and offsets land in the index.
// CHECK-LABEL: func.func @reshape_slice
// CHECK:         loop.for %a0 = 0 to 12 {
// CHECK-NEXT:      %in = loop.load %x_b[%a0 floordiv 6, %a0 mod 6] : memref<2x6xf32>
// CHECK:         loop.for %a0 = 0 to 4 {
// CHECK-NEXT:      %in = loop.load %flat_b[%a0 * 2 + 3] : memref<12xf32>
func.func @reshape_slice(%x: tensor<2x6xf32>) -> tensor<4xf32> {
  %flat = ten.index_map %x (d0) -> (d0 floordiv 6, d0 mod 6) : tensor<2x6xf32> -> tensor<12xf32>
  %odd = ten.index_map %flat (d0) -> (d0 * 2 + 3) : tensor<12xf32> -> tensor<4xf32>
  func.return %odd : tensor<4xf32>
}
