// RUN: deplo-opt %s -p decompose | filecheck %s

// mean: sum, divide by the count; keepdim re-inserts the reduced axis with an index_map.
func.func @keepdim(%x: tensor<2x4x64xf32>) -> tensor<2x4x1xf32> {
  %mean = torch.aten "mean.dim"(self = %x) {dim = [-1], keepdim = true} : (tensor<2x4x64xf32>) -> tensor<2x4x1xf32>
  func.return %mean : tensor<2x4x1xf32>
}

// CHECK-LABEL: func.func @keepdim
// CHECK-NEXT:    %sum = ten.reduce add %x dims [2] : tensor<2x4x64xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %mean_r = ten.map(%sum) : tensor<2x4xf32> -> tensor<2x4xf32> {
// CHECK-NEXT:    ^bb0(%[[S:.*]]: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.constant 6.400000e+01 : f32
// CHECK-NEXT:      %[[M:.*]] = arith.divf %[[S]], %[[N]] : f32
// CHECK-NEXT:      ten.yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %mean = ten.index_map %mean_r (d0, d1, d2) -> (d0, d1) : tensor<2x4xf32> -> tensor<2x4x1xf32>
// CHECK-NEXT:    func.return %mean : tensor<2x4x1xf32>

// Several axes, keepdim false: the map is the result.
func.func @dims(%x: tensor<2x4x64xf32>) -> tensor<4xf32> {
  %mean = torch.aten "mean.dim"(self = %x) {dim = [0, 2]} : (tensor<2x4x64xf32>) -> tensor<4xf32>
  func.return %mean : tensor<4xf32>
}

// CHECK-LABEL: func.func @dims
// CHECK-NEXT:    %sum = ten.reduce add %x dims [0, 2] : tensor<2x4x64xf32> -> tensor<4xf32>
// CHECK-NEXT:    %mean = ten.map(%sum) : tensor<4xf32> -> tensor<4xf32> {
// CHECK:           arith.constant 1.280000e+02 : f32
// CHECK:         func.return %mean : tensor<4xf32>
