// RUN: deplo-opt %s | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// TMA and mbarriers (sm_90): a barrier array in shared memory, its init by one thread, a
// whole-box copy whose bytes complete on a barrier, the arrival that expects them, and
// the parity wait; a destination aligned to 1024 bytes (as a 128-byte swizzle needs), a
// swizzled box.

func.func @forward(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k_tma grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %smem = kernel.shared "x_smem" align 1024 : memref<2x2x16x32xf32>
    %bar = kernel.mbarrier "k_bar" : memref<2xi64>
    %c0 = arith.constant 0 : index
    %lead = arith.cmpi eq, %t, %c0 : index
    scf.if %lead {
      kernel.mbarrier_init %bar[0], 1 : memref<2xi64>
      kernel.mbarrier_init %bar[1], 1 : memref<2xi64>
    }
    kernel.barrier
    scf.if %lead {
      kernel.mbarrier_arrive_expect_tx %bar[0], 4096 : memref<2xi64>
      kernel.tma_load %xb[0, 0] -> %smem[0, 0, 0, 0] box [16, 32] barrier %bar[0] : memref<128x64xf32> -> memref<2x2x16x32xf32>, memref<2xi64>
      kernel.tma_load %xb[0, 32] -> %smem[1, 0, 0, 0] box [16, 32] swizzle 128 barrier %bar[0] : memref<128x64xf32> -> memref<2x2x16x32xf32>, memref<2xi64>
    }
    %acc = kernel.for %ko = %c0 to 8 step 1 reduce(add) -> f32 {
      %buf = affine.apply affine_map<(d0) -> (d0 mod 2)> (%ko)
      %parity = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)> (%ko)
      kernel.mbarrier_wait %bar[%buf], %parity : memref<2xi64>
      %v = kernel.load %smem[%buf, %t floordiv 32, 0, %t mod 32] : memref<2x2x16x32xf32>
      kernel.yield %v : f32
    }
    kernel.store %acc, %yb[%t] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       %smem = kernel.shared "x_smem" align 1024 : memref<2x2x16x32xf32>
// CHECK-NEXT:  %bar = kernel.mbarrier "k_bar" : memref<2xi64>
// CHECK:         kernel.mbarrier_init %bar[0], 1 : memref<2xi64>
// CHECK-NEXT:    kernel.mbarrier_init %bar[1], 1 : memref<2xi64>
// CHECK:         kernel.mbarrier_arrive_expect_tx %bar[0], 4096 : memref<2xi64>
// CHECK-NEXT:    kernel.tma_load %xb[0, 0] -> %smem[0, 0, 0, 0] box [16, 32] barrier %bar[0] : memref<128x64xf32> -> memref<2x2x16x32xf32>, memref<2xi64>
// CHECK-NEXT:    kernel.tma_load %xb[0, 32] -> %smem[1, 0, 0, 0] box [16, 32] swizzle 128 barrier %bar[0] : memref<128x64xf32> -> memref<2x2x16x32xf32>, memref<2xi64>
// CHECK:         kernel.mbarrier_wait %bar[%buf], %parity : memref<2xi64>
