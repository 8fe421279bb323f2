// RUN: deplo-opt %s -p decompose | filecheck %s

// A shift amount out of [0, bits) is clamped before the shift (no undefined shift), and
// the left shift's result replaced by 0 there, as torch defines it.
func.func @shift(%v: tensor<8xi32>, %s: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) {
  %shl = torch.aten "bitwise_left_shift.Tensor"(self = %v, other = %s) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %shr = torch.aten "__rshift__.Scalar"(self = %v) {other = 3} : (tensor<8xi32>) -> tensor<8xi32>
  func.return %shl, %shr : tensor<8xi32>, tensor<8xi32>
}

// CHECK-LABEL: func.func @shift
// CHECK-NEXT:    %shl = ten.map(%v, %s) : tensor<8xi32>, tensor<8xi32> -> tensor<8xi32> {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: i32, %[[S:.*]]: i32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[S]], %[[Z]] : i32
// CHECK-NEXT:      %[[W:.*]] = arith.constant 32 : i32
// CHECK-NEXT:      %[[FAR:.*]] = arith.cmpi sge, %[[S]], %[[W]] : i32
// CHECK-NEXT:      %[[OUT:.*]] = arith.ori %[[NEG]], %[[FAR]] : i1
// CHECK-NEXT:      %[[Z1:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[AMT:.*]] = arith.select %[[OUT]], %[[Z1]], %[[S]] : i32
// CHECK-NEXT:      %[[SH:.*]] = arith.shli %[[V]], %[[AMT]] : i32
// CHECK-NEXT:      %[[Z2:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[OUT]], %[[Z2]], %[[SH]] : i32
// CHECK-NEXT:      ten.yield %[[R]] : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    %shr = ten.map(%v)
// CHECK:           arith.constant 31 : i32
// CHECK:           arith.shrsi

// Integer pow by a number is square-and-multiply over its bits (x**5 = x * (x*x)^2); a
// tensor exponent steps through every bit of its type. tensor ** tensor reads the
// schema's `exponent`, number ** tensor is math.powf of a constant base.
func.func @pow(%i: tensor<8xi32>, %e: tensor<8xi32>, %x: tensor<8xf32>) -> (tensor<8xi32>, tensor<8xi32>, tensor<8xf32>, tensor<8xf32>) {
  %p5 = torch.aten "pow.Tensor_Scalar"(self = %i) {exponent = 5} : (tensor<8xi32>) -> tensor<8xi32>
  %pt = torch.aten "pow.Tensor_Tensor"(self = %i, exponent = %e) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %pf = torch.aten "pow.Tensor_Tensor"(self = %x, exponent = %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %ps = torch.aten "pow.Scalar"(exponent = %x) {self = 2.5} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %p5, %pt, %pf, %ps : tensor<8xi32>, tensor<8xi32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @pow
// CHECK-NEXT:    %p5 = ten.map(%i) : tensor<8xi32> -> tensor<8xi32> {
// CHECK-NEXT:    ^bb0(%[[I:.*]]: i32):
// CHECK-NEXT:      %[[SQ:.*]] = arith.muli %[[I]], %[[I]] : i32
// CHECK-NEXT:      %[[Q:.*]] = arith.muli %[[SQ]], %[[SQ]] : i32
// CHECK-NEXT:      %[[P:.*]] = arith.muli %[[I]], %[[Q]] : i32
// CHECK-NEXT:      ten.yield %[[P]] : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    %pt = ten.map(%i, %e)
// CHECK-COUNT-31:  arith.andi %{{.*}}, %{{.*}} : i32
// CHECK:         %pf = ten.map(%x, %x) : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[PF:.*]] = math.powf %[[A]], %[[B]] : f32
// CHECK-NEXT:      ten.yield %[[PF]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %ps = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[C:.*]]: f32):
// CHECK-NEXT:      %[[BASE:.*]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT:      %[[PS:.*]] = math.powf %[[BASE]], %[[C]] : f32
// CHECK-NEXT:      ten.yield %[[PS]] : f32
