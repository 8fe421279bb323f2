// RUN: deplo-opt %s -p decompose | filecheck %s

func.func @views(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %p = torch.aten "permute.default"(self = %x) {dims = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %c = torch.aten "contiguous.default"(self = %p) : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  %v = torch.aten "view.default"(self = %c) {size = [4, 6]} : (tensor<4x2x3xf32>) -> tensor<4x6xf32>
  func.return %v : tensor<4x6xf32>
}

// A permute, a no-op copy and a reshape fold into one affine view of the source.
// CHECK-LABEL: func.func @views
// CHECK-NEXT:    %v = ten.index_map %x (d0, d1) -> ((d1 floordiv 3), (d1 mod 3), d0) : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %v : tensor<4x6xf32>

func.func @unsqueeze_t(%x: tensor<8x16xf32>) -> tensor<16x1x8xf32> {
  %t = torch.aten "t.default"(self = %x) : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %u = torch.aten "unsqueeze.default"(self = %t) {dim = 1} : (tensor<16x8xf32>) -> tensor<16x1x8xf32>
  func.return %u : tensor<16x1x8xf32>
}

// CHECK-LABEL: func.func @unsqueeze_t
// CHECK-NEXT:    %u = ten.index_map %x (d0, d1, d2) -> (d2, d0) : tensor<8x16xf32> -> tensor<16x1x8xf32>
