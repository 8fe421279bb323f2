// RUN: deplo-opt %s -p decompose | filecheck %s

// cumprod: cumsum's masked form with 1 where j > i, multiplied over j.
func.func @cumprod(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %cumprod = torch.aten "cumprod.default"(self = %x) {dim = 1} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %cumprod : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @cumprod
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1, d2) -> (d0, d2) : tensor<2x5xf32> -> tensor<2x5x5xf32>
// CHECK-NEXT:    %i = ten.iota dim 1 : tensor<2x5x5xi64>
// CHECK-NEXT:    %j = ten.iota dim 2 : tensor<2x5x5xi64>
// CHECK-NEXT:    %terms = ten.map(%x_b, %i, %j)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[I:.*]]: i64, %[[J:.*]]: i64):
// CHECK-NEXT:      %[[LE:.*]] = arith.cmpi sle, %[[J]], %[[I]] : i64
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[T:.*]] = arith.select %[[LE]], %[[X]], %[[ONE]] : f32
// CHECK-NEXT:      ten.yield %[[T]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %cumprod = ten.reduce mul %terms dims [2] : tensor<2x5x5xf32> -> tensor<2x5xf32>

// logcumsumexp: the prefix max (-inf outside the prefix, an infinite max taken as 0),
// then log of the prefix sum of exp(x - max), plus max.
func.func @logcumsumexp(%x: tensor<5xf32>) -> tensor<5xf32> {
  %lcse = torch.aten "logcumsumexp.default"(self = %x) {dim = 0} : (tensor<5xf32>) -> tensor<5xf32>
  func.return %lcse : tensor<5xf32>
}

// CHECK-LABEL: func.func @logcumsumexp
// CHECK:         %seen = ten.map(%x_b, %i, %j)
// CHECK:           arith.constant 0xff800000 : f32
// CHECK:         %prefix_max = ten.reduce max %seen dims [1] : tensor<5x5xf32> -> tensor<5xf32>
// CHECK-NEXT:    %max = ten.map(%prefix_max)
// CHECK:           arith.cmpf oeq
// CHECK:         %max_b = ten.index_map %max (d0, d1) -> (d0) : tensor<5xf32> -> tensor<5x5xf32>
// CHECK-NEXT:    %exp = ten.map(%x_b, %max_b, %i, %j)
// CHECK:           math.exp
// CHECK:         %sum = ten.reduce add %exp dims [1] : tensor<5x5xf32> -> tensor<5xf32>
// CHECK-NEXT:    %lcse = ten.map(%sum, %max)
// CHECK:           math.log
// CHECK-NEXT:      arith.addf

// cummax: the prefix max, and the last position j <= i holding it (or a NaN).
func.func @cummax(%x: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xi64>) {
  %values, %indices = torch.aten "cummax.default"(self = %x) {dim = 0} : (tensor<5xf32>) -> (tensor<5xf32>, tensor<5xi64>)
  func.return %values, %indices : tensor<5xf32>, tensor<5xi64>
}

// CHECK-LABEL: func.func @cummax
// CHECK:         %seen = ten.map(%x_b, %i, %j)
// CHECK:           arith.constant 0xff800000 : f32
// CHECK:         %values = ten.reduce max %seen dims [1] : tensor<5x5xf32> -> tensor<5xf32>
// CHECK-NEXT:    %[[B:.*]] = ten.index_map %values (d0, d1) -> (d0) : tensor<5xf32> -> tensor<5x5xf32>
// CHECK-NEXT:    %hits = ten.map(%x_b, %[[B]], %i, %j)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32, %[[I:.*]]: i64, %[[J:.*]]: i64):
// CHECK-NEXT:      %[[EQ:.*]] = arith.cmpf oeq, %[[V]], %[[M]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK-NEXT:      %[[HIT:.*]] = arith.ori %[[EQ]], %[[NAN]] : i1
// CHECK-NEXT:      %[[LE:.*]] = arith.cmpi sle, %[[J]], %[[I]] : i64
// CHECK-NEXT:      %[[SEEN:.*]] = arith.andi %[[HIT]], %[[LE]] : i1
// CHECK-NEXT:      %[[NONE:.*]] = arith.constant -1 : i64
// CHECK-NEXT:      arith.select %[[SEEN]], %[[J]], %[[NONE]] : i64
// CHECK:         %indices = ten.reduce max %hits dims [1] : tensor<5x5xi64> -> tensor<5xi64>
