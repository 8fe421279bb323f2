// RUN: deplo-opt %s -p decompose | filecheck %s

// A copy into the same type is the value itself: nothing is emitted.
func.func @same(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %to = torch.aten "to.dtype"(self = %x) {dtype = f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %copy = torch.aten "_to_copy.default"(self = %to) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %copy : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @same
// CHECK-NEXT:    func.return %x : tensor<4x8xf32>

// A dtype change is one map of a cast; the target is the result's type.
func.func @int_to_float(%x: tensor<1x8x1xi64>, %y: tensor<8xf32>) -> (tensor<1x8x1xf32>, tensor<8xf16>) {
  %to = torch.aten "to.dtype"(self = %x) {dtype = f32} : (tensor<1x8x1xi64>) -> tensor<1x8x1xf32>
  %type_as = torch.aten "type_as.default"(self = %y, other = %x) : (tensor<8xf32>, tensor<1x8x1xi64>) -> tensor<8xf16>
  func.return %to, %type_as : tensor<1x8x1xf32>, tensor<8xf16>
}

// CHECK-LABEL: func.func @int_to_float
// CHECK:         %to = ten.map(%x) : tensor<1x8x1xi64> -> tensor<1x8x1xf32> {
// CHECK:           arith.sitofp %{{.*}} : i64 to f32
// CHECK:         %type_as = ten.map(%y) : tensor<8xf32> -> tensor<8xf16> {
// CHECK:           arith.truncf %{{.*}} : f32 to f16

// To bool is a truth test, not a truncation.
func.func @to_bool(%x: tensor<4xf32>) -> tensor<4xi1> {
  %to = torch.aten "to.dtype_layout"(self = %x) {dtype = i1} : (tensor<4xf32>) -> tensor<4xi1>
  func.return %to : tensor<4xi1>
}

// CHECK-LABEL: func.func @to_bool
// CHECK:         %to = ten.map(%x) : tensor<4xf32> -> tensor<4xi1> {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[B:.*]] = arith.cmpf une, %[[V]], %[[Z]] : f32
// CHECK-NEXT:      ten.yield %[[B]] : i1
