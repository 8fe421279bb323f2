// RUN: deplo-opt %s -p decompose | filecheck %s

// rotate_half's halves: x[..., :8] and x[..., 8:] (an end of 2**63 - 1 clamps to the extent).
func.func @halves(%x: tensor<1x4x8x16xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %slice = torch.aten "slice.Tensor"(self = %x) {dim = 3, start = 0, end = 8} : (tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %slice_1 = torch.aten "slice.Tensor"(self = %x) {dim = 3, start = 8, end = 9223372036854775807} : (tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  func.return %slice, %slice_1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func.func @halves
// CHECK-NEXT:    %slice = ten.index_map %x (d0, d1, d2, d3) -> (d0, d1, d2, d3) : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %slice_1 = ten.index_map %x (d0, d1, d2, d3) -> (d0, d1, d2, (d3 + 8)) : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>

// Negative starts count from the end; a step multiplies; select pins and drops the axis;
// a view of a view is one map.
func.func @forms(%x: tensor<6x10xf32>) -> (tensor<6x3xf32>, tensor<10xf32>, tensor<2x10xf32>) {
  %slice = torch.aten "slice.Tensor"(self = %x) {dim = 1, start = -7, end = 10, step = 3} : (tensor<6x10xf32>) -> tensor<6x3xf32>
  %select = torch.aten "select.int"(self = %x) {dim = 0, index = -1} : (tensor<6x10xf32>) -> tensor<10xf32>
  %narrow = torch.aten "narrow.default"(self = %x) {dim = 0, start = 2, length = 4} : (tensor<6x10xf32>) -> tensor<4x10xf32>
  %slice_2 = torch.aten "slice.Tensor"(self = %narrow) {dim = 0, start = 1, end = 3} : (tensor<4x10xf32>) -> tensor<2x10xf32>
  func.return %slice, %select, %slice_2 : tensor<6x3xf32>, tensor<10xf32>, tensor<2x10xf32>
}

// CHECK-LABEL: func.func @forms
// CHECK-NEXT:    %slice = ten.index_map %x (d0, d1) -> (d0, ((d1 * 3) + 3)) : tensor<6x10xf32> -> tensor<6x3xf32>
// CHECK-NEXT:    %select = ten.index_map %x (d0) -> (5, d0) : tensor<6x10xf32> -> tensor<10xf32>
// CHECK-NEXT:    %slice_1 = ten.index_map %x (d0, d1) -> ((d0 + 3), d1) : tensor<6x10xf32> -> tensor<2x10xf32>
