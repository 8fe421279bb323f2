// RUN: deplo-opt %s -p decompose | filecheck %s

// ord 2: the squares summed, then sqrt.
func.func @l2(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %norm = torch.aten "linalg_vector_norm.default"(self = %x) {ord = 2, dim = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %norm : tensor<4xf32>
}

// CHECK-LABEL: func.func @l2
// CHECK-NEXT:    %terms = ten.map(%x) : tensor<4x8xf32> -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32):
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[V]], %[[V]] : f32
// CHECK-NEXT:      ten.yield %[[SQ]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %reduced = ten.reduce add %terms dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %norm = ten.map(%reduced) : tensor<4xf32> -> tensor<4xf32> {
// CHECK:           math.sqrt
// CHECK:         func.return %norm : tensor<4xf32>

// ord inf: the largest magnitude, over every axis when dim is None.
func.func @inf(%x: tensor<4x8xf32>) -> tensor<f32> {
  %norm = torch.aten "linalg_vector_norm.default"(self = %x) {ord = 0x7ff0000000000000 : f64} : (tensor<4x8xf32>) -> tensor<f32>
  func.return %norm : tensor<f32>
}

// CHECK-LABEL: func.func @inf
// CHECK-NEXT:    %terms = ten.map(%x) : tensor<4x8xf32> -> tensor<4x8xf32> {
// CHECK:           math.absf
// CHECK:         %reduced = ten.reduce max %terms dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
// CHECK-NOT:     math.powf
// CHECK:         func.return

// Another p: |x|^p summed, then ^(1/p); keepdim.
func.func @p3(%x: tensor<4x8xf32>) -> tensor<1x8xf32> {
  %norm = torch.aten "linalg_vector_norm.default"(self = %x) {ord = 3.0 : f64, dim = [0], keepdim = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  func.return %norm : tensor<1x8xf32>
}

// CHECK-LABEL: func.func @p3
// CHECK:           %[[A:.*]] = math.absf
// CHECK-NEXT:      %[[P:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      math.powf %[[A]], %[[P]] : f32
// CHECK:         %reduced = ten.reduce add %terms dims [0] : tensor<4x8xf32> -> tensor<8xf32>
// CHECK:           arith.constant 0.333333343 : f32
// CHECK:         %norm = ten.index_map %norm_r (d0, d1) -> (d1) : tensor<8xf32> -> tensor<1x8xf32>
