// RUN: deplo-opt %s -p lift-to-loop | filecheck %s
// RUN: deplo-opt %s -p lift-to-loop,fuse | filecheck %s --check-prefix=FUSED

// A causal mask: positions are data (ten.iota), compared and selected in a map.
func.func @causal(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = ten.iota dim 0 : tensor<4x4xi64>
  %c = ten.iota dim 1 : tensor<4x4xi64>
  %m = ten.map(%x, %r, %c) : tensor<4x4xf32>, tensor<4x4xi64>, tensor<4x4xi64> -> tensor<4x4xf32> {
  ^bb0(%v: f32, %i: i64, %j: i64):
    %le = arith.cmpi sle, %j, %i : i64
    %ninf = arith.constant 0xFF800000 : f32
    %s = arith.select %le, %v, %ninf : f32
    ten.yield %s : f32
  }
  func.return %m : tensor<4x4xf32>
}

// CHECK:      %r = loop.kernel @k_r ins() outs(%r_b : tensor<4x4xi64>)
// CHECK:          %pos = arith.index_cast %a0 : index to i64
// CHECK-NEXT:     loop.store %pos, %r_b[%a0, %a1] : memref<4x4xi64>

// The iotas fuse away into the loops' own indices.
// FUSED:      loop.kernel @k_m ins(%x_b = %x : tensor<4x4xf32>)
// FUSED-NOT:  loop.kernel
// FUSED:        %pos = arith.index_cast %a0 : index to i64
// FUSED:          %pos_1 = arith.index_cast %a1 : index to i64
// FUSED-NEXT:     %le = arith.cmpi sle, %pos_1, %pos : i64
