// RUN: deplo-opt %s -p decompose | filecheck %s

// var: the mean, the squared deviations from it summed, divided by n - correction (7);
// keepdim re-inserts the reduced axis.
func.func @var(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %var = torch.aten "var.correction"(self = %x) {dim = [1], correction = 1, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  func.return %var : tensor<4x1xf32>
}

// CHECK-LABEL: func.func @var
// CHECK-NEXT:    %sum = ten.reduce add %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %mean = ten.map(%sum) : tensor<4xf32> -> tensor<4xf32> {
// CHECK:           arith.constant 8.000000e+00 : f32
// CHECK:         %mean_b = ten.index_map %mean (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %dev2 = ten.map(%x, %mean_b) : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32):
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[V]], %[[M]] : f32
// CHECK-NEXT:      %[[D2:.*]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK-NEXT:      ten.yield %[[D2]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %m2 = ten.reduce add %dev2 dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %var_r = ten.map(%m2) : tensor<4xf32> -> tensor<4xf32> {
// CHECK:           arith.constant 7.000000e+00 : f32
// CHECK:         %var = ten.index_map %var_r (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    func.return %var : tensor<4x1xf32>

// var_mean: two results; the mean is the one the deviations are taken from, and
// correction 0 divides by n.
func.func @var_mean(%x: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %var, %mean = torch.aten "var_mean.correction"(self = %x) {dim = [0], correction = 0} : (tensor<4x8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  func.return %var, %mean : tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @var_mean
// CHECK-NEXT:    %sum = ten.reduce add %x dims [0] : tensor<4x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %mean = ten.map(%sum) : tensor<8xf32> -> tensor<8xf32> {
// CHECK:         %mean_b = ten.index_map %mean (d0, d1) -> (d1) : tensor<8xf32> -> tensor<4x8xf32>
// CHECK:         %m2 = ten.reduce add %dev2 dims [0] : tensor<4x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %var = ten.map(%m2) : tensor<8xf32> -> tensor<8xf32> {
// CHECK:           arith.constant 4.000000e+00 : f32
// CHECK:         func.return %var, %mean : tensor<8xf32>, tensor<8xf32>
