// RUN: deplo-opt %s -p decompose | filecheck %s

// gather linearises the table: one ten.gather at index * stride + the other positions.
func.func @gather(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %gather = torch.aten "gather.default"(self = %x, index = %i) {dim = 1} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  func.return %gather : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @gather
// CHECK-NEXT:    %pos = ten.iota dim 0 : tensor<3x2xi64>
// CHECK-NEXT:    %lin = ten.map(%pos, %i) : tensor<3x2xi64>, tensor<3x2xi64> -> tensor<3x2xi64> {
// CHECK-NEXT:    ^bb0(%[[R:.*]]: i64, %[[C:.*]]: i64):
// CHECK-NEXT:      %[[S:.*]] = arith.constant 4 : i64
// CHECK-NEXT:      %[[M:.*]] = arith.muli %[[R]], %[[S]] : i64
// CHECK-NEXT:      %[[L:.*]] = arith.addi %[[M]], %[[C]] : i64
// CHECK-NEXT:      ten.yield %[[L]] : i64
// CHECK-NEXT:    }
// CHECK-NEXT:    %x_b = ten.index_map %x (d0) -> ((d0 floordiv 4), (d0 mod 4)) : tensor<3x4xf32> -> tensor<12xf32>
// CHECK-NEXT:    %gather = ten.gather %x_b[%lin] axis 0 : tensor<12xf32>, tensor<3x2xi64> -> tensor<3x2xf32>

// scatter_add along dim 0: over (self's positions, the index's rows), a hit is
// index == the output row; the hits' sources are summed and added to self.
func.func @scatter_add(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %s: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %scatter_add = torch.aten "scatter_add.default"(self = %x, index = %i, src = %s) {dim = 0} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return %scatter_add : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @scatter_add
// CHECK-NEXT:    %i_b = ten.index_map %i (d0, d1, d2) -> (d2, d1) : tensor<2x3xi64> -> tensor<4x3x2xi64>
// CHECK-NEXT:    %pos = ten.iota dim 0 : tensor<4x3x2xi64>
// CHECK-NEXT:    %hits = ten.map(%i_b, %pos) : tensor<4x3x2xi64>, tensor<4x3x2xi64> -> tensor<4x3x2xi1> {
// CHECK:           arith.cmpi eq
// CHECK:         %s_b = ten.index_map %s (d0, d1, d2) -> (d2, d1) : tensor<2x3xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT:    %terms = ten.map(%hits, %s_b) : tensor<4x3x2xi1>, tensor<4x3x2xf32> -> tensor<4x3x2xf32> {
// CHECK:           arith.select
// CHECK:         %red = ten.reduce add %terms dims [2] : tensor<4x3x2xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %scatter_add = ten.map(%x, %red) : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32> {
// CHECK:           arith.addf

// index_put without accumulate: the last hitting index wins (a max reduce finds it, a
// second reduce picks its value), untouched positions keep self.
func.func @index_put(%x: tensor<5x2xf32>, %i: tensor<3xi64>, %v: tensor<3x2xf32>) -> tensor<5x2xf32> {
  %index_put = torch.aten "index_put.default"(self = %x, indices = %i, values = %v) : (tensor<5x2xf32>, tensor<3xi64>, tensor<3x2xf32>) -> tensor<5x2xf32>
  func.return %index_put : tensor<5x2xf32>
}

// CHECK-LABEL: func.func @index_put
// CHECK:         %hits = ten.map
// CHECK:         %last = ten.reduce max %at dims [2] : tensor<5x2x3xi64> -> tensor<5x2xi64>
// CHECK:         %picked = ten.reduce add %terms dims [2] : tensor<5x2x3xf32> -> tensor<5x2xf32>
// CHECK-NEXT:    %index_put = ten.map(%x, %last, %picked) : tensor<5x2xf32>, tensor<5x2xi64>, tensor<5x2xf32> -> tensor<5x2xf32> {
// CHECK:           arith.cmpi sge
// CHECK:           arith.select

// slice_scatter: src where the position is on the slice, read in bounds everywhere.
func.func @slice_scatter(%x: tensor<6x2xf32>, %s: tensor<2x2xf32>) -> tensor<6x2xf32> {
  %slice_scatter = torch.aten "slice_scatter.default"(self = %x, src = %s) {dim = 0, start = 1, end = 5, step = 2} : (tensor<6x2xf32>, tensor<2x2xf32>) -> tensor<6x2xf32>
  func.return %slice_scatter : tensor<6x2xf32>
}

// CHECK-LABEL: func.func @slice_scatter
// CHECK-NEXT:    %s_b = ten.index_map %s (d0, d1) -> ((((d0 + 3) mod 4) floordiv 2), d1) : tensor<2x2xf32> -> tensor<6x2xf32>
// CHECK-NEXT:    %pos = ten.iota dim 0 : tensor<6x2xi64>
// CHECK-NEXT:    %slice_scatter = ten.map(%s_b, %x, %pos) : tensor<6x2xf32>, tensor<6x2xf32>, tensor<6x2xi64> -> tensor<6x2xf32> {
// CHECK:           arith.remsi
// CHECK:           arith.select
