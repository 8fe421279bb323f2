// RUN: deplo-opt %s -p decompose | filecheck %s

// flip reads n - 1 - i, roll (i + c) mod n with c = -shift mod n, repeat i mod n.
func.func @reorder(%x: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x8x5xf32>) {
  %flip = torch.aten "flip.default"(self = %x) {dims = [0]} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %roll = torch.aten "roll.default"(self = %x) {shifts = [2], dims = [1]} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %repeat = torch.aten "repeat.default"(self = %x) {repeats = [2, 2, 1]} : (tensor<4x5xf32>) -> tensor<2x8x5xf32>
  func.return %flip, %roll, %repeat : tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x8x5xf32>
}

// CHECK-LABEL: func.func @reorder
// CHECK-NEXT:    %flip = ten.index_map %x (d0, d1) -> (((d0 * -1) + 3), d1) : tensor<4x5xf32> -> tensor<4x5xf32>
// CHECK-NEXT:    %roll = ten.index_map %x (d0, d1) -> (d0, ((d1 + 3) mod 5)) : tensor<4x5xf32> -> tensor<4x5xf32>
// CHECK-NEXT:    %repeat = ten.index_map %x (d0, d1, d2) -> ((d1 mod 4), d2) : tensor<4x5xf32> -> tensor<2x8x5xf32>

// split gives several results, each a slice at its running offset (one may be empty);
// unbind selects; unfold appends the window axis; diagonal appends the diagonal's.
func.func @pieces(%x: tensor<6x4xf32>) -> (tensor<1x4xf32>, tensor<0x4xf32>, tensor<5x4xf32>, tensor<6xf32>, tensor<6x2x2xf32>, tensor<3xf32>) {
  %split:3 = torch.aten "split_with_sizes.default"(self = %x) {split_sizes = [1, 0, 5]} : (tensor<6x4xf32>) -> (tensor<1x4xf32>, tensor<0x4xf32>, tensor<5x4xf32>)
  %unbind:4 = torch.aten "unbind.int"(self = %x) {dim = 1} : (tensor<6x4xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  %unfold = torch.aten "unfold.default"(self = %x) {dimension = 1, size = 2, step = 2} : (tensor<6x4xf32>) -> tensor<6x2x2xf32>
  %diagonal = torch.aten "diagonal.default"(self = %x) {offset = 1} : (tensor<6x4xf32>) -> tensor<3xf32>
  func.return %split#0, %split#1, %split#2, %unbind#3, %unfold, %diagonal : tensor<1x4xf32>, tensor<0x4xf32>, tensor<5x4xf32>, tensor<6xf32>, tensor<6x2x2xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @pieces
// CHECK-NEXT:    %split = ten.index_map %x (d0, d1) -> (d0, d1) : tensor<6x4xf32> -> tensor<1x4xf32>
// CHECK-NEXT:    %split_1 = ten.index_map %x (d0, d1) -> ((d0 + 1), d1) : tensor<6x4xf32> -> tensor<0x4xf32>
// CHECK-NEXT:    %split_2 = ten.index_map %x (d0, d1) -> ((d0 + 1), d1) : tensor<6x4xf32> -> tensor<5x4xf32>
// CHECK-NEXT:    %unbind = ten.index_map %x (d0) -> (d0, 3) : tensor<6x4xf32> -> tensor<6xf32>
// CHECK-NEXT:    %unfold = ten.index_map %x (d0, d1, d2) -> (d0, ((d1 * 2) + d2)) : tensor<6x4xf32> -> tensor<6x2x2xf32>
// CHECK-NEXT:    %diagonal = ten.index_map %x (d0) -> (d0, (d0 + 1)) : tensor<6x4xf32> -> tensor<3xf32>

// constant_pad_nd: a crop is a shifted view; a pad selects between the view and the value.
func.func @pads(%x: tensor<4x5xf32>) -> (tensor<4x3xf32>, tensor<4x8xf32>) {
  %crop = torch.aten "constant_pad_nd.default"(self = %x) {pad = [-1, -1]} : (tensor<4x5xf32>) -> tensor<4x3xf32>
  %pad = torch.aten "constant_pad_nd.default"(self = %x) {pad = [2, 1], value = 1.500000e+00} : (tensor<4x5xf32>) -> tensor<4x8xf32>
  func.return %crop, %pad : tensor<4x3xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @pads
// CHECK-NEXT:    %crop = ten.index_map %x (d0, d1) -> (d0, (d1 + 1)) : tensor<4x5xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1) -> (d0, ((d1 + 3) mod 5)) : tensor<4x5xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %pos = ten.iota dim 1 : tensor<4x8xi64>
// CHECK-NEXT:    %pad = ten.map(%x_b, %pos) : tensor<4x8xf32>, tensor<4x8xi64> -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %[[P:.*]]: i64):
// CHECK-NEXT:      %[[LO:.*]] = arith.constant 2 : i64
// CHECK-NEXT:      %[[GE:.*]] = arith.cmpi sge, %[[P]], %[[LO]] : i64
// CHECK-NEXT:      %[[HI:.*]] = arith.constant 7 : i64
// CHECK-NEXT:      %[[LT:.*]] = arith.cmpi slt, %[[P]], %[[HI]] : i64
// CHECK-NEXT:      %[[IN:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK-NEXT:      %[[C:.*]] = arith.constant 1.500000e+00 : f32
// CHECK-NEXT:      %[[S:.*]] = arith.select %[[IN]], %[[V]], %[[C]] : f32
// CHECK-NEXT:      ten.yield %[[S]] : f32

// as_strided of a program input reads its flattened storage at an affine address.
func.func @strided(%x: tensor<4x5xf32>) -> tensor<3x2xf32> {
  %as_strided = torch.aten "as_strided.default"(self = %x) {size = [3, 2], stride = [5, 2], storage_offset = 1} : (tensor<4x5xf32>) -> tensor<3x2xf32>
  func.return %as_strided : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @strided
// CHECK-NEXT:    %as_strided = ten.index_map %x (d0, d1) -> (((((d0 * 5) + 1) + (d1 * 2)) floordiv 5), ((((d0 * 5) + 1) + (d1 * 2)) mod 5)) : tensor<4x5xf32> -> tensor<3x2xf32>
