// RUN: deplo-opt %s -p decompose | filecheck %s

// torch.round rounds halves to even; to decimals it scales by 10^d first. fmod is the
// exact math_ext.remf; remainder adds the divisor to a nonzero remainder of the other
// sign (Python's %).
func.func @float(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %round = torch.aten "round.decimals"(self = %x) {decimals = 2} : (tensor<8xf32>) -> tensor<8xf32>
  %fmod = torch.aten "fmod.Tensor"(self = %x, other = %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %rem = torch.aten "remainder.Scalar"(self = %x) {other = 2.5} : (tensor<8xf32>) -> tensor<8xf32>
  %floor = torch.aten "div.Tensor_mode"(self = %x, other = %y) {rounding_mode = "floor"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %round, %fmod, %rem, %floor : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @float
// CHECK-NEXT:    %round = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.constant 1.000000e+02 : f32
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[A]], %[[S]] : f32
// CHECK-NEXT:      %[[R:.*]] = math.roundeven %[[M]] : f32
// CHECK-NEXT:      %[[D:.*]] = arith.divf %[[R]], %[[S]] : f32
// CHECK-NEXT:      ten.yield %[[D]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %fmod = ten.map(%x, %y) : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:      %[[F:.*]] = math_ext.remf %[[B]], %[[C]] : f32
// CHECK-NEXT:      ten.yield %[[F]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %rem = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[E:.*]]: f32):
// CHECK-NEXT:      %[[Y:.*]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT:      %[[MOD:.*]] = math_ext.remf %[[E]], %[[Y]] : f32
// CHECK:           %[[NZ:.*]] = arith.cmpf une, %[[MOD]], %{{.*}} : f32
// CHECK:           %[[MNEG:.*]] = arith.cmpf olt, %[[MOD]], %{{.*}} : f32
// CHECK:           %[[YNEG:.*]] = arith.cmpf olt, %[[Y]], %{{.*}} : f32
// CHECK-NEXT:      %[[DIFF:.*]] = arith.xori %[[MNEG]], %[[YNEG]] : i1
// CHECK-NEXT:      %[[FIX:.*]] = arith.andi %[[NZ]], %[[DIFF]] : i1
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[MOD]], %[[Y]] : f32
// CHECK-NEXT:      %[[OUT:.*]] = arith.select %[[FIX]], %[[SUM]], %[[MOD]] : f32
// CHECK-NEXT:      ten.yield %[[OUT]] : f32
// CHECK:         %floor = ten.map(%x, %y)
// CHECK:           math_ext.remf
// CHECK:           math.floor
// CHECK:           math.copysign
// CHECK:           ten.yield

// Integers: floor division is the truncating divsi, one less where the signs differ and
// the remainder is nonzero; floor of an integer is the integer itself.
func.func @ints(%i: tensor<8xi32>, %j: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) {
  %div = torch.aten "div.Tensor_mode"(self = %i, other = %j) {rounding_mode = "floor"} : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %floor = torch.aten "floor.default"(self = %i) : (tensor<8xi32>) -> tensor<8xi32>
  func.return %div, %floor : tensor<8xi32>, tensor<8xi32>
}

// CHECK-LABEL: func.func @ints
// CHECK-NEXT:    %div = ten.map(%i, %j) : tensor<8xi32>, tensor<8xi32> -> tensor<8xi32> {
// CHECK-NEXT:    ^bb0(%[[P:.*]]: i32, %[[Q:.*]]: i32):
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:      %[[T:.*]] = arith.divsi %[[P]], %[[Q]] : i32
// CHECK-NEXT:      %[[RM:.*]] = arith.remsi %[[P]], %[[Q]] : i32
// CHECK:           arith.xori
// CHECK-NEXT:      %[[ADJ:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:      %[[LESS:.*]] = arith.subi %[[T]], %[[ONE]] : i32
// CHECK-NEXT:      %[[RES:.*]] = arith.select %[[ADJ]], %[[LESS]], %[[T]] : i32
// CHECK-NEXT:      ten.yield %[[RES]] : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %div, %i : tensor<8xi32>, tensor<8xi32>
