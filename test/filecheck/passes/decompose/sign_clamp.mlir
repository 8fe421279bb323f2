// RUN: deplo-opt %s -p decompose | filecheck %s

// signbit reads the sign bit (true for -0.0 and -NaN); isnan is an unordered compare;
// sign is (x > 0) - (x < 0), so sign(NaN) is 0 as in torch.
func.func @sign(%x: tensor<8xf32>) -> (tensor<8xi1>, tensor<8xi1>, tensor<8xf32>) {
  %signbit = torch.aten "signbit.default"(self = %x) : (tensor<8xf32>) -> tensor<8xi1>
  %isnan = torch.aten "isnan.default"(self = %x) : (tensor<8xf32>) -> tensor<8xi1>
  %sign = torch.aten "sign.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %signbit, %isnan, %sign : tensor<8xi1>, tensor<8xi1>, tensor<8xf32>
}

// CHECK-LABEL: func.func @sign
// CHECK-NEXT:    %signbit = ten.map(%x) : tensor<8xf32> -> tensor<8xi1> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[BITS:.*]] = arith.bitcast %[[A]] : f32 to i32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[BITS]], %[[Z]] : i32
// CHECK-NEXT:      ten.yield %[[NEG]] : i1
// CHECK-NEXT:    }
// CHECK-NEXT:    %isnan = ten.map(%x) : tensor<8xf32> -> tensor<8xi1> {
// CHECK-NEXT:    ^bb0(%[[B:.*]]: f32):
// CHECK-NEXT:      %[[U:.*]] = arith.cmpf uno, %[[B]], %[[B]] : f32
// CHECK-NEXT:      ten.yield %[[U]] : i1
// CHECK-NEXT:    }
// CHECK-NEXT:    %sign = ten.map(%x)
// CHECK:           arith.cmpf ogt
// CHECK:           arith.select
// CHECK:           arith.cmpf olt
// CHECK:           arith.select
// CHECK-NEXT:      arith.subf

// clamp and hardtanh: max then min, NaN-propagating (maximumf/minimumf) on floats,
// signed maxsi/minsi on integers; a None bound is left out; tensor bounds broadcast.
func.func @clamp(%x: tensor<4x8xf32>, %lo: tensor<8xf32>, %i: tensor<4x8xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi64>) {
  %clamp = torch.aten "clamp.default"(self = %x) {min = -1.0, max = 2.0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %lower = torch.aten "clamp.Tensor"(self = %x, min = %lo) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %hardtanh = torch.aten "hardtanh.default"(self = %x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %iclamp = torch.aten "clamp.default"(self = %i) {max = 3} : (tensor<4x8xi64>) -> tensor<4x8xi64>
  func.return %clamp, %lower, %hardtanh, %iclamp : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi64>
}

// CHECK-LABEL: func.func @clamp
// CHECK-NEXT:    %clamp = ten.map(%x) : tensor<4x8xf32> -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT:      %[[LO:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT:      %[[MX:.*]] = arith.maximumf %[[X]], %[[LO]] : f32
// CHECK-NEXT:      %[[HI:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      %[[MN:.*]] = arith.minimumf %[[MX]], %[[HI]] : f32
// CHECK-NEXT:      ten.yield %[[MN]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %lo_b = ten.index_map %lo (d0, d1) -> (d1) : tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %lower = ten.map(%x, %lo_b) : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %[[L:.*]]: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[V]], %[[L]] : f32
// CHECK-NEXT:      ten.yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %hardtanh = ten.map(%x)
// CHECK:           arith.constant -1.000000e+00 : f32
// CHECK-NEXT:      arith.maximumf
// CHECK-NEXT:      arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      arith.minimumf
// CHECK:         %iclamp = ten.map(%i) : tensor<4x8xi64> -> tensor<4x8xi64> {
// CHECK-NEXT:    ^bb0(%[[I:.*]]: i64):
// CHECK-NEXT:      %[[THREE:.*]] = arith.constant 3 : i64
// CHECK-NEXT:      %[[MI:.*]] = arith.minsi %[[I]], %[[THREE]] : i64
// CHECK-NEXT:      ten.yield %[[MI]] : i64
