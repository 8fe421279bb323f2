// RUN: deplo-opt %s -p decompose | filecheck %s

// The special functions upstream math lacks are math_ext ops (CUDA's erfinvf, lgammaf,
// erfcf, erfcxf); an integer input is cast to the float result first.
func.func @special(%x: tensor<8xf32>, %i: tensor<8xi32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %erfinv = torch.aten "erfinv.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  %lgamma = torch.aten "lgamma.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  %erfc = torch.aten "erfc.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  %erfcx = torch.aten "special_erfcx.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  %log1p = torch.aten "log1p.default"(self = %i) : (tensor<8xi32>) -> tensor<8xf32>
  func.return %erfinv, %lgamma, %erfc, %erfcx, %log1p : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @special
// CHECK-NEXT:    %erfinv = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[R:.*]] = math_ext.erfinv %[[A]] : f32
// CHECK-NEXT:      ten.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %lgamma = ten.map(%x)
// CHECK:           math_ext.lgamma %{{.*}} : f32
// CHECK:         %erfc = ten.map(%x)
// CHECK:           math_ext.erfc %{{.*}} : f32
// CHECK:         %erfcx = ten.map(%x)
// CHECK:           math_ext.erfcx %{{.*}} : f32
// CHECK:         %log1p = ten.map(%i) : tensor<8xi32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[I:.*]]: i32):
// CHECK-NEXT:      %[[F:.*]] = arith.sitofp %[[I]] : i32 to f32
// CHECK-NEXT:      %[[L:.*]] = math.log1p %[[F]] : f32
// CHECK-NEXT:      ten.yield %[[L]] : f32

// digamma is torch's own algorithm in upstream ops: the reflection's tangent, the
// unrolled recurrence up to 10 (ten selects), the asymptotic series, the poles.
func.func @digamma(%x: tensor<8xf32>) -> tensor<8xf32> {
  %digamma = torch.aten "digamma.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %digamma : tensor<8xf32>
}

// CHECK-LABEL: func.func @digamma
// CHECK:         %digamma = ten.map(%x)
// CHECK:           math.roundeven
// CHECK:           math.tan
// CHECK-COUNT-10:  arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK:           math.log
// CHECK:           arith.constant 2.25175261 : f32
// CHECK:           arith.constant 0x7fc00000 : f32
// CHECK:           math.copysign
