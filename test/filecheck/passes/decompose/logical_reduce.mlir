// RUN: deplo-opt %s -p decompose | filecheck %s

// any: the max of truth values as i32 zeros and ones, then > 0 (max's identity is
// INT32_MIN, so an empty axis is false).
func.func @any(%x: tensor<3x4xf32>) -> tensor<3xi1> {
  %any = torch.aten "any.dim"(self = %x) {dim = 1} : (tensor<3x4xf32>) -> tensor<3xi1>
  func.return %any : tensor<3xi1>
}

// CHECK-LABEL: func.func @any
// CHECK-NEXT:    %truth = ten.map(%x) : tensor<3x4xf32> -> tensor<3x4xi32> {
// CHECK:           arith.cmpf une
// CHECK:         %max = ten.reduce max %truth dims [1] : tensor<3x4xi32> -> tensor<3xi32>
// CHECK-NEXT:    %any = ten.map(%max) : tensor<3xi32> -> tensor<3xi1> {
// CHECK:           arith.cmpi sgt

// all over every axis: a min.
func.func @all(%x: tensor<3x4xi1>) -> tensor<i1> {
  %all = torch.aten "all.default"(self = %x) : (tensor<3x4xi1>) -> tensor<i1>
  func.return %all : tensor<i1>
}

// CHECK-LABEL: func.func @all
// CHECK:         %min = ten.reduce min %truth dims [0, 1] : tensor<3x4xi32> -> tensor<i32>

// prod of int32: in the int64 result type.
func.func @prod(%x: tensor<3x4xi32>) -> tensor<i64> {
  %prod = torch.aten "prod.default"(self = %x) : (tensor<3x4xi32>) -> tensor<i64>
  func.return %prod : tensor<i64>
}

// CHECK-LABEL: func.func @prod
// CHECK-NEXT:    %x_i64 = ten.map(%x) : tensor<3x4xi32> -> tensor<3x4xi64> {
// CHECK:           arith.extsi
// CHECK:         %prod = ten.reduce mul %x_i64 dims [0, 1] : tensor<3x4xi64> -> tensor<i64>

// amax of booleans: as i32, then back to booleans.
func.func @amax_bool(%x: tensor<3x4xi1>) -> tensor<3xi1> {
  %amax = torch.aten "amax.default"(self = %x) {dim = [1]} : (tensor<3x4xi1>) -> tensor<3xi1>
  func.return %amax : tensor<3xi1>
}

// CHECK-LABEL: func.func @amax_bool
// CHECK-NEXT:    %x_i32 = ten.map(%x) : tensor<3x4xi1> -> tensor<3x4xi32> {
// CHECK:         %max = ten.reduce max %x_i32 dims [1] : tensor<3x4xi32> -> tensor<3xi32>
// CHECK-NEXT:    %amax = ten.map(%max) : tensor<3xi32> -> tensor<3xi1> {
// CHECK:           arith.cmpi ne

// nansum: NaN read as 0.
func.func @nansum(%x: tensor<3x4xf32>) -> tensor<f32> {
  %nansum = torch.aten "nansum.default"(self = %x) : (tensor<3x4xf32>) -> tensor<f32>
  func.return %nansum : tensor<f32>
}

// CHECK-LABEL: func.func @nansum
// CHECK-NEXT:    %[[T:.*]] = ten.map(%x) : tensor<3x4xf32> -> tensor<3x4xf32> {
// CHECK:           %[[NAN:.*]] = arith.cmpf uno
// CHECK:           arith.select %[[NAN]]
// CHECK:         %nansum = ten.reduce add %[[T]] dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
