// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per rule of the TMA and mbarrier verifiers: each message names the op and the
// rule it breaks.

func.func @unaligned_destination(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" : memref<16x64xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[0, 0] box [16, 64] barrier %bar[0] : memref<128x64xf32> -> memref<16x64xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: the shared destination 'x_smem' is 16-byte aligned; TMA needs 128 (kernel.shared ... align 128)

// -----

func.func @padded_slab(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 128 : memref<16x68xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[0, 0] box [16, 64] barrier %bar[0] : memref<128x64xf32> -> memref<16x68xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: the box [16, 64] must fill the trailing dimensions of the shared array [16, 68] from index 0 (TMA writes a box densely: no pad)

// -----

func.func @misaligned_piece(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 128 : memref<3x4x4xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[1, 0, 0] box [4, 4] barrier %bar[0] : memref<128x64xf32> -> memref<3x4x4xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: the box does not start at a multiple of 128 bytes of the shared array (TMA's destination alignment)

// -----

func.func @narrow_row(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 128 : memref<16x2xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[0, 0] box [16, 2] barrier %bar[0] : memref<128x64xf32> -> memref<16x2xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: the box's inner row is 8 bytes, not a multiple of 16

// -----

func.func @box_too_long(%x: tensor<512x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<512x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 128 : memref<512x4xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[0, 0] box [512, 4] barrier %bar[0] : memref<512x64xf32> -> memref<512x4xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: box extent 512 is outside TMA's 1 to 256

// -----

func.func @wider_than_swizzle(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 1024 : memref<16x64xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[0, 0] box [16, 64] swizzle 128 barrier %bar[0] : memref<128x64xf32> -> memref<16x64xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: the box's inner row is 256 bytes, wider than the 128-byte swizzle span

// -----

func.func @odd_stride(%x: tensor<128x6xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x6xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 128 : memref<16x4xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[0, 0] box [16, 4] barrier %bar[0] : memref<128x6xf32> -> memref<16x4xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: a source stride of 24 bytes, not a multiple of 16 (TMA's global strides)

// -----

func.func @box_outside(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 128 : memref<16x64xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[120, 0] -> %smem[0, 0] box [16, 64] barrier %bar[0] : memref<128x64xf32> -> memref<16x64xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: dimension 0 of the box leaves the source's extent 128

// -----

func.func @from_an_output(%x: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<128x64xf32>) {
    %smem = kernel.shared "x_smem" align 128 : memref<16x64xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %yb[0, 0] -> %smem[0, 0] box [16, 64] barrier %bar[0] : memref<128x64xf32> -> memref<16x64xf32>, memref<1xi64>
  }
  func.return %y : tensor<128x64xf32>
}

// CHECK: kernel.tma_load: the source must be an input buffer of the kernel (TMA reads global memory)

// -----

func.func @wait_uninitialised(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    %c0 = arith.constant 0 : index
    kernel.mbarrier_wait %bar[0], %c0 : memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.mbarrier_wait: the mbarrier 'k_bar' is used before any kernel.mbarrier_init of it

// -----

func.func @wait_on_shared(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %bar = kernel.shared "k_bar" : memref<1xi64>
    %c0 = arith.constant 0 : index
    kernel.mbarrier_wait %bar[0], %c0 : memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.mbarrier_wait: the barrier must be a kernel.mbarrier array

// -----

func.func @wait_parity(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    %t = kernel.thread_id x
    kernel.mbarrier_wait %bar[0], %t : memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.mbarrier_wait: the parity ranges over [0, 63], not 0 or 1

// -----

func.func @barrier_type(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %bar = kernel.mbarrier "k_bar" : memref<2xi32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.mbarrier: mbarriers are a memref<Nxi64> (one 8-byte word each), not memref<2xi32>

// -----

func.func @expect_too_much(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.mbarrier_arrive_expect_tx %bar[0], 2000000 : memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.mbarrier_arrive_expect_tx: 2000000 bytes; an mbarrier's transaction count holds 0 to 1048575

// -----

func.func @bad_alignment(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 96 : memref<16xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.shared: align 96 must be a power of two up to 1024

// -----

func.func @swizzle_unaligned(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 128 : memref<16x32xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[0, 0] box [16, 32] swizzle 128 barrier %bar[0] : memref<128x64xf32> -> memref<16x32xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: a 128-byte swizzle follows the address bits: the box must start at a multiple of 1024 bytes of an array aligned to 1024

// -----

func.func @swizzle_mode(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %smem = kernel.shared "x_smem" align 1024 : memref<16x16xf32>
    %bar = kernel.mbarrier "k_bar" : memref<1xi64>
    kernel.mbarrier_init %bar[0], 1 : memref<1xi64>
    kernel.tma_load %xb[0, 0] -> %smem[0, 0] box [16, 16] swizzle 64 barrier %bar[0] : memref<128x64xf32> -> memref<16x16xf32>, memref<1xi64>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.tma_load: swizzle 64: the swizzle modes modelled are 128 bytes
