// RUN: deplo-opt %s -p decompose | filecheck %s

// diff with a prepended column: a cat (select on the position), then the difference of
// two shifted views of it.
func.func @diff(%x: tensor<1x8xi64>, %p: tensor<1x1xi64>) -> tensor<1x8xi64> {
  %diff = torch.aten "diff.default"(self = %x, prepend = %p) {n = 1, dim = -1} : (tensor<1x8xi64>, tensor<1x1xi64>) -> tensor<1x8xi64>
  func.return %diff : tensor<1x8xi64>
}

// CHECK-LABEL: func.func @diff
// CHECK-NEXT:    %p_b = ten.index_map %p (d0, d1) -> (d0, 0) : tensor<1x1xi64> -> tensor<1x9xi64>
// CHECK-NEXT:    %x_b = ten.index_map %x (d0, d1) -> (d0, ((d1 + 7) mod 8)) : tensor<1x8xi64> -> tensor<1x9xi64>
// CHECK-NEXT:    %pos = ten.iota dim 1 : tensor<1x9xi64>
// CHECK-NEXT:    %padded = ten.map(%p_b, %x_b, %pos)
// CHECK:         %padded_b = ten.index_map %padded (d0, d1) -> (d0, (d1 + 1)) : tensor<1x9xi64> -> tensor<1x8xi64>
// CHECK-NEXT:    %padded_b_1 = ten.index_map %padded (d0, d1) -> (d0, d1) : tensor<1x9xi64> -> tensor<1x8xi64>
// CHECK-NEXT:    %diff = ten.map(%padded_b, %padded_b_1) : tensor<1x8xi64>, tensor<1x8xi64> -> tensor<1x8xi64> {
// CHECK-NEXT:    ^bb0(%[[HI:.*]]: i64, %[[LO:.*]]: i64):
// CHECK-NEXT:      %[[D:.*]] = arith.subi %[[HI]], %[[LO]] : i64
// CHECK-NEXT:      ten.yield %[[D]] : i64

// Booleans differ by xor; n = 2 applies the difference twice.
func.func @bools(%x: tensor<5xi1>) -> tensor<3xi1> {
  %diff = torch.aten "diff.default"(self = %x) {n = 2} : (tensor<5xi1>) -> tensor<3xi1>
  func.return %diff : tensor<3xi1>
}

// CHECK-LABEL: func.func @bools
// CHECK:           arith.xori
// CHECK:         %diff = ten.map
// CHECK:           arith.xori
