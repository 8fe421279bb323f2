// RUN: deplo-opt %s -p decompose | filecheck %s

// rotate_half: cat((-x2, x1), -1). Each input is viewed over the whole result, its axis
// index wrapped into range, and one map selects by position; the views compose with the
// slices, so x is read directly at shifted indices.
func.func @rotate_half(%x: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %slice = torch.aten "slice.Tensor"(self = %x) {dim = 3, start = 0, end = 8} : (tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %slice_1 = torch.aten "slice.Tensor"(self = %x) {dim = 3, start = 8, end = 9223372036854775807} : (tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %neg = torch.aten "neg.default"(self = %slice_1) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %cat = torch.aten "cat.default"(tensors = %neg, tensors = %slice) {dim = -1} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x16xf32>
  func.return %cat : tensor<1x4x8x16xf32>
}

// CHECK-LABEL: func.func @rotate_half
// CHECK-NEXT:    %slice = ten.index_map %x (d0, d1, d2, d3) -> (d0, d1, d2, (d3 + 8)) : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %neg = ten.map(%slice)
// CHECK:         %neg_b = ten.index_map %neg (d0, d1, d2, d3) -> (d0, d1, d2, (d3 mod 8)) : tensor<1x4x8x8xf32> -> tensor<1x4x8x16xf32>
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1, d2, d3) -> (d0, d1, d2, (d3 mod 8)) : tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
// CHECK-NEXT:    %pos = ten.iota dim 3 : tensor<1x4x8x16xi64>
// CHECK-NEXT:    %cat = ten.map(%neg_b, %x_b, %pos) : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xi64> -> tensor<1x4x8x16xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[P:.*]]: i64):
// CHECK-NEXT:      %[[N:.*]] = arith.constant 8 : i64
// CHECK-NEXT:      %[[LT:.*]] = arith.cmpi slt, %[[P]], %[[N]] : i64
// CHECK-NEXT:      %[[S:.*]] = arith.select %[[LT]], %[[A]], %[[B]] : f32
// CHECK-NEXT:      ten.yield %[[S]] : f32

// Three inputs of unequal sizes and types: a chain of selects. A later part's offset is
// added mod its size, so no index goes negative (4 mod 2 is 0 here); a part of size 1 is
// read at 0; the int part is cast in the body.
func.func @three(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x2xi64>) -> tensor<2x6xf32> {
  %cat = torch.aten "cat.default"(tensors = %a, tensors = %b, tensors = %c) {dim = 1} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xi64>) -> tensor<2x6xf32>
  func.return %cat : tensor<2x6xf32>
}

// CHECK-LABEL: func.func @three
// CHECK-NEXT:    %a_b = ten.index_map %a (d0, d1) -> (d0, (d1 mod 3)) : tensor<2x3xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    %b_b = ten.index_map %b (d0, d1) -> (d0, 0) : tensor<2x1xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    %c_b = ten.index_map %c (d0, d1) -> (d0, (d1 mod 2)) : tensor<2x2xi64> -> tensor<2x6xi64>
// CHECK:         ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: i64, %[[P:.*]]: i64):
// CHECK-NEXT:      %[[CF:.*]] = arith.sitofp %[[C]] : i64 to f32
// CHECK-NEXT:      %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK-NEXT:      %[[LT4:.*]] = arith.cmpi slt, %[[P]], %[[FOUR]] : i64
// CHECK-NEXT:      %[[S1:.*]] = arith.select %[[LT4]], %[[B]], %[[CF]] : f32
// CHECK-NEXT:      %[[THREE:.*]] = arith.constant 3 : i64
// CHECK-NEXT:      %[[LT3:.*]] = arith.cmpi slt, %[[P]], %[[THREE]] : i64
// CHECK-NEXT:      %[[S0:.*]] = arith.select %[[LT3]], %[[A]], %[[S1]] : f32
// CHECK-NEXT:      ten.yield %[[S0]] : f32

// The same input twice (the rotary embedding's cat((freqs, freqs))) is a repeat: one view.
func.func @repeat(%f: tensor<1x8x8xf32>) -> tensor<1x8x16xf32> {
  %cat = torch.aten "cat.default"(tensors = %f, tensors = %f) {dim = -1} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<1x8x16xf32>
  func.return %cat : tensor<1x8x16xf32>
}

// CHECK-LABEL: func.func @repeat
// CHECK-NEXT:    %cat = ten.index_map %f (d0, d1, d2) -> (d0, d1, (d2 mod 8)) : tensor<1x8x8xf32> -> tensor<1x8x16xf32>
// CHECK-NEXT:    func.return %cat
