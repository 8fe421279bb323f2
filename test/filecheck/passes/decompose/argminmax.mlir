// RUN: deplo-opt %s -p decompose | filecheck %s

// argmax: the max, then the least position holding it (or a NaN), EXTENT (8) elsewhere.
func.func @argmax(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %argmax = torch.aten "argmax.default"(self = %x) {dim = 1} : (tensor<4x8xf32>) -> tensor<4xi64>
  func.return %argmax : tensor<4xi64>
}

// CHECK-LABEL: func.func @argmax
// CHECK-NEXT:    %max = ten.reduce max %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %i1 = ten.iota dim 1 : tensor<4x8xi64>
// CHECK-NEXT:    %max_b = ten.index_map %max (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %hits = ten.map(%x, %max_b, %i1) : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi64> -> tensor<4x8xi64> {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32, %[[I:.*]]: i64):
// CHECK-NEXT:      %[[EQ:.*]] = arith.cmpf oeq, %[[V]], %[[M]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK-NEXT:      %[[HIT:.*]] = arith.ori %[[EQ]], %[[NAN]] : i1
// CHECK-NEXT:      %[[END:.*]] = arith.constant 8 : i64
// CHECK-NEXT:      %[[P:.*]] = arith.select %[[HIT]], %[[I]], %[[END]] : i64
// CHECK-NEXT:      ten.yield %[[P]] : i64
// CHECK-NEXT:    }
// CHECK-NEXT:    %argmax = ten.reduce min %hits dims [1] : tensor<4x8xi64> -> tensor<4xi64>
// CHECK-NEXT:    func.return %argmax : tensor<4xi64>

// dim=None: the row-major position over every axis, from one iota per axis; integers
// compare with cmpi and have no NaN.
func.func @argmin_flat(%x: tensor<4x8xi32>) -> tensor<i64> {
  %argmin = torch.aten "argmin.default"(self = %x) : (tensor<4x8xi32>) -> tensor<i64>
  func.return %argmin : tensor<i64>
}

// CHECK-LABEL: func.func @argmin_flat
// CHECK-NEXT:    %min = ten.reduce min %x dims [0, 1] : tensor<4x8xi32> -> tensor<i32>
// CHECK-NEXT:    %i0 = ten.iota dim 0 : tensor<4x8xi64>
// CHECK-NEXT:    %i1 = ten.iota dim 1 : tensor<4x8xi64>
// CHECK:         %hits = ten.map(%x, %min_b, %i0, %i1)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: i32, %[[M:.*]]: i32, %[[I:.*]]: i64, %[[J:.*]]: i64):
// CHECK-NEXT:      %[[EQ:.*]] = arith.cmpi eq, %[[V]], %[[M]] : i32
// CHECK-NEXT:      %[[S:.*]] = arith.constant 8 : i64
// CHECK-NEXT:      %[[IS:.*]] = arith.muli %[[I]], %[[S]] : i64
// CHECK-NEXT:      %[[P:.*]] = arith.addi %[[IS]], %[[J]] : i64
// CHECK-NEXT:      %[[END:.*]] = arith.constant 32 : i64
// CHECK-NEXT:      arith.select %[[EQ]], %[[P]], %[[END]] : i64
// CHECK:         %argmin = ten.reduce min %hits dims [0, 1] : tensor<4x8xi64> -> tensor<i64>

// max.dim: both results, keepdim on each.
func.func @max_dim(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>) {
  %values, %indices = torch.aten "max.dim"(self = %x) {dim = -1, keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>)
  func.return %values, %indices : tensor<4x1xf32>, tensor<4x1xi64>
}

// CHECK-LABEL: func.func @max_dim
// CHECK-NEXT:    %values_r = ten.reduce max %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK:         %indices_r = ten.reduce min %hits dims [1] : tensor<4x8xi64> -> tensor<4xi64>
// CHECK-NEXT:    %values = ten.index_map %values_r (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %indices = ten.index_map %indices_r (d0, d1) -> (d0) : tensor<4xi64> -> tensor<4x1xi64>
// CHECK-NEXT:    func.return %values, %indices : tensor<4x1xf32>, tensor<4x1xi64>
