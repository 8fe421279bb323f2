// RUN: deplo-opt %s -p fuse | filecheck %s
// RUN: deplo-opt %s -p 'fuse{launch-ops=0 max-intensity=0.1}' | filecheck %s --check-prefix=STRICT

// The other two refusals of the guard (refused.mlir has the reduction one).
//
// weight_prologue: a three-op map of a weight, read inside a (128, 64) x (64, 64) matmul's K loop,
// would run once per output row: 3.9x the arithmetic the program needs (the limit is 2x)
// in a kernel doing 25.6 ops per byte of its minimum traffic, compute-bound on an H200
// (the limit is 8 ops/byte), and 2M ops in all (over launch-ops). It stays a kernel of
// its own, read by the matmul.
// broadcast_expensive: the same kind of map of a vector, read by every row of a matrix,
// also reruns per row (2.29x), but that kernel is tiny (128 ops) and memory-bound (0.4
// ops/byte), so the recomputation is free and it fuses. With both exemptions lowered
// (the second RUN line: launch-ops=0, max-intensity=0.1), it is refused.
// shared: exp(sum(x)) is read by two kernels; copying it into both would compute the
// reduction twice, so it stays one kernel whose result both read.

func.func @weight_prologue(%x: tensor<128x64xf32>, %w: tensor<64x64xf32>) -> tensor<128x64xf32> {
  %f = loop.kernel @k_f ins(%w_b = %w : tensor<64x64xf32>) outs(%f_b : tensor<64x64xf32>) attributes {covers = ["f"]} {
    loop.for %a0 = 0 to 64 {
      loop.for %a1 = 0 to 64 {
        %a = loop.load %w_b[%a0, %a1] : memref<64x64xf32>
        %e = math.exp %a : f32
        %t = math.tanh %e : f32
        %m = arith.mulf %t, %e : f32
        loop.store %m, %f_b[%a0, %a1] : memref<64x64xf32>
      }
    }
  }
  %y = loop.kernel @k_y ins(%x_b = %x : tensor<128x64xf32>, %f_b = %f : tensor<64x64xf32>) outs(%y_b : tensor<128x64xf32>) attributes {covers = ["y"]} {
    loop.for %a0 = 0 to 128 {
      loop.for %a1 = 0 to 64 {
        %y_1 = loop.for %a2 = 0 to 64 reduce(add) -> f32 {
          %a = loop.load %x_b[%a0, %a2] : memref<128x64xf32>
          %b = loop.load %f_b[%a2, %a1] : memref<64x64xf32>
          %p = arith.mulf %a, %b : f32
          loop.yield %p : f32
        }
        loop.store %y_1, %y_b[%a0, %a1] : memref<128x64xf32>
      }
    }
  }
  func.return %y : tensor<128x64xf32>
}
func.func @broadcast_expensive(%v: tensor<8xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %f = loop.kernel @k_f ins(%v_b = %v : tensor<8xf32>) outs(%f_b : tensor<8xf32>) attributes {covers = ["f"]} {
    loop.for %a0 = 0 to 8 {
      %a = loop.load %v_b[%a0] : memref<8xf32>
      %e = math.exp %a : f32
      %t = math.tanh %e : f32
      %m = arith.mulf %t, %e : f32
      loop.store %m, %f_b[%a0] : memref<8xf32>
    }
  }
  %fb = loop.kernel @k_fb ins(%f_b = %f : tensor<8xf32>) outs(%fb_b : tensor<4x8xf32>) attributes {covers = ["fb"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        %in = loop.load %f_b[%a1] : memref<8xf32>
        loop.store %in, %fb_b[%a0, %a1] : memref<4x8xf32>
      }
    }
  }
  %y = loop.kernel @k_y ins(%x_b = %x : tensor<4x8xf32>, %fb_b = %fb : tensor<4x8xf32>) outs(%y_b : tensor<4x8xf32>) attributes {covers = ["y"]} {
    loop.for %a0 = 0 to 4 {
      loop.for %a1 = 0 to 8 {
        %a = loop.load %x_b[%a0, %a1] : memref<4x8xf32>
        %b = loop.load %fb_b[%a0, %a1] : memref<4x8xf32>
        %s = arith.addf %a, %b : f32
        loop.store %s, %y_b[%a0, %a1] : memref<4x8xf32>
      }
    }
  }
  func.return %y : tensor<4x8xf32>
}
func.func @shared(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = loop.kernel @k_s ins(%x_b = %x : tensor<4x8xf32>) outs(%s_b : tensor<4xf32>) attributes {covers = ["s"]} {
    loop.for %a0 = 0 to 4 {
      %s_1 = loop.for %a1 = 0 to 8 reduce(add) -> f32 {
        %in = loop.load %x_b[%a0, %a1] : memref<4x8xf32>
        loop.yield %in : f32
      }
      loop.store %s_1, %s_b[%a0] : memref<4xf32>
    }
  }
  %n = loop.kernel @k_n ins(%s_b = %s : tensor<4xf32>) outs(%n_b : tensor<4xf32>) attributes {covers = ["n"]} {
    loop.for %a0 = 0 to 4 {
      %a = loop.load %s_b[%a0] : memref<4xf32>
      %v = math.exp %a : f32
      loop.store %v, %n_b[%a0] : memref<4xf32>
    }
  }
  %r1 = loop.kernel @k_r1 ins(%n_b = %n : tensor<4xf32>) outs(%r1_b : tensor<4xf32>) attributes {covers = ["r1"]} {
    loop.for %a0 = 0 to 4 {
      %a = loop.load %n_b[%a0] : memref<4xf32>
      %v = arith.addf %a, %a : f32
      loop.store %v, %r1_b[%a0] : memref<4xf32>
    }
  }
  %r2 = loop.kernel @k_r2 ins(%n_b = %n : tensor<4xf32>) outs(%r2_b : tensor<4xf32>) attributes {covers = ["r2"]} {
    loop.for %a0 = 0 to 4 {
      %a = loop.load %n_b[%a0] : memref<4xf32>
      %v = arith.mulf %a, %a : f32
      loop.store %v, %r2_b[%a0] : memref<4xf32>
    }
  }
  func.return %r1, %r2 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @weight_prologue
// CHECK:         %f = loop.kernel @k_f
// CHECK:         %y = loop.kernel @k_y ins(%x_b = %x : tensor<128x64xf32>, %f_b = %f : tensor<64x64xf32>)
// CHECK-SAME:      fusion.refused = ["@k_f not fused: its arithmetic would be recomputed 3.91x (limit 2x) in a compute-bound kernel (25.6 ops/byte, limit 8)"]
// CHECK:             %b = loop.load %f_b[%a2, %a1] : memref<64x64xf32>

// CHECK-LABEL: func.func @broadcast_expensive
// CHECK-NEXT:    %y = loop.kernel @k_y ins(%x_b = %x : tensor<4x8xf32>, %v_b = %v : tensor<8xf32>)
// CHECK-SAME:      covers = ["f", "fb", "y"]
// CHECK-NOT:       fusion.refused
// CHECK:             math.tanh

// STRICT-LABEL: func.func @broadcast_expensive
// STRICT:         %f = loop.kernel @k_f
// STRICT:         %y = loop.kernel @k_y ins(%x_b = %x : tensor<4x8xf32>, %f_b = %f : tensor<8xf32>)
// STRICT-SAME:      fusion.refused = ["@k_f not fused: its arithmetic would be recomputed 2.29x (limit 2x) in a compute-bound kernel (0.4 ops/byte, limit 0.1)"]

// CHECK-LABEL: func.func @shared
// CHECK:         %n = loop.kernel @k_n ins(%x_b = %x : tensor<4x8xf32>) outs(%n_b : tensor<4xf32>) attributes {covers = ["s", "n"]} {
// CHECK-NEXT:      loop.for %a0 = 0 to 4 {
// CHECK-NEXT:        %s = loop.for %a1 = 0 to 8 reduce(add) -> f32 {
// CHECK:             %v = math.exp %s : f32
// CHECK:         %r1 = loop.kernel @k_r1 ins(%n_b = %n : tensor<4xf32>)
// CHECK-SAME:      fusion.refused = ["@k_n not fused: it has other users, and copying it would compute its reduction twice"]
// CHECK:         %r2 = loop.kernel @k_r2 ins(%n_b = %n : tensor<4xf32>)
// CHECK-SAME:      fusion.refused = ["@k_n not fused: it has other users, and copying it would compute its reduction twice"]
