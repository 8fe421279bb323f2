// RUN: deplo-opt %s -p tileify | filecheck %s

// A loop with a nonzero lower bound becomes an axis counted from 0, its index rebuilt.
func.func @shifted(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = loop.kernel @k_shift ins(%xb = %x : tensor<8xf32>) outs(%yb : tensor<8xf32>) {
    loop.for %i = 2 to 8 {
      %v = loop.load %xb[%i] : memref<8xf32>
      loop.store %v, %yb[%i] : memref<8xf32>
    }
  }
  func.return %y : tensor<8xf32>
}

// CHECK-LABEL: func.func @shifted
// CHECK:       tile.kernel @k_shift axes(%i : 6 = free)
// CHECK-NEXT:    %i_1 = affine.apply affine_map<(d0) -> ((d0 + 2))> (%i)
// CHECK-NEXT:    %v = loop.load %xb[%i_1] : memref<8xf32>

// Two sibling loops are not a perfect nest: the nest stops above them.
func.func @siblings(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = loop.kernel @k_siblings ins(%xb = %x : tensor<4x8xf32>) outs(%yb : tensor<4x8xf32>) {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        %v = loop.load %xb[%a0, %a1] : memref<4x8xf32>
        loop.store %v, %yb[%a0, %a1] : memref<4x8xf32>
      }
      loop.for %a2 = 0 to 8 {
        %v = loop.load %xb[%a0, %a2] : memref<4x8xf32>
        %d = arith.addf %v, %v : f32
        loop.store %d, %yb[%a0, %a2] : memref<4x8xf32>
      }
    }
  }
  func.return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @siblings
// CHECK:       tile.kernel @k_siblings axes(%a0 : 4 = free)
// CHECK-NEXT:    loop.for %a1 = 0 to 8 {
// CHECK:         loop.for %a2 = 0 to 8 {

// A reduction to a scalar has no free loop: a kernel with no axes.
func.func @scalar(%x: tensor<64xf32>) -> tensor<f32> {
  %y = loop.kernel @k_sum ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<f32>) {
    %s = loop.for %a0 = 0 to 64 reduce(add) -> f32 {
      %v = loop.load %xb[%a0] : memref<64xf32>
      loop.yield %v : f32
    }
    loop.store %s, %yb[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK-LABEL: func.func @scalar
// CHECK:       tile.kernel @k_sum axes() ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<f32>) {
// CHECK-NEXT:    %s = loop.for %a0 = 0 to 64 reduce(add) -> f32 {

// A loop of no iterations (IR written by hand: the pipeline never makes one) is dropped,
// and a reduce loop of none gives its kind's identity: zero-trip loops are legal.
func.func @zero_trip(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k_zero ins(%xb = %x : tensor<4x8xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      %s = loop.for %a1 = 3 to 3 reduce(max) -> f32 {
        %v = loop.load %xb[%a0, %a1] : memref<4x8xf32>
        loop.yield %v : f32
      }
      loop.store %s, %yb[%a0] : memref<4xf32>
    }
    loop.for %a2 = 0 to 0 {
      %w = loop.load %xb[%a2, 0] : memref<4x8xf32>
      loop.store %w, %yb[%a2] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @zero_trip
// CHECK:       tile.kernel @k_zero axes(%a0 : 4 = free)
// CHECK-NEXT:    %s = arith.constant 0xff800000 : f32
// CHECK-NEXT:    loop.store %s, %yb[%a0] : memref<4xf32>
// CHECK-NEXT:  }
