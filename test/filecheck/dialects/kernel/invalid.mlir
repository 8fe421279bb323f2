// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per rule of the kernel dialect's verifiers.

func.func @empty_grid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(0, 1, 1) block(4, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.kernel: grid (0, 1, 1) and block (4, 1, 1) must be positive

// -----

func.func @too_many_threads(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(512, 2, 2) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.kernel: block (512, 2, 2) has 2048 threads, more than 1024

// -----

func.func @too_much_shared(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(32, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    %a = kernel.shared "a" : memref<32768xf32>
    %b = kernel.shared "b" : memref<128x200xf32>
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.kernel: 233472 bytes of shared memory exceed the target's 232448 per block

// -----

func.func @buffer_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "kernel.kernel"(%x) <{sym_name = "k", grid = [#builtin.int<1>, #builtin.int<1>, #builtin.int<1>], block = [#builtin.int<1>, #builtin.int<1>, #builtin.int<1>]}> ({
  ^bb0(%xb: memref<4xf32>, %yb: memref<4xf16>):
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.kernel: buffer argument 1 is memref<4xf16>, expected memref<4xf32> for tensor<4xf32>

// -----

func.func @bad_dimension(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(4, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    %t = kernel.thread_id w
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.thread_id: dimension 'w' is not x, y or z

// -----

func.func @thread_id_outside() -> index {
  %t = kernel.thread_id x
  func.return %t : index
}

// CHECK: kernel.thread_id: only meaningful inside a kernel.kernel

// -----

func.func @block_id_outside() -> index {
  %b = kernel.block_id x
  func.return %b : index
}

// CHECK: kernel.block_id: only meaningful inside a kernel.kernel

// -----

func.func @nested_shared(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(4, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    kernel.for %i = %c0 to 2 step 1 {
      %s = kernel.shared "s" : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.shared: shared memory is allocated at the top level of a kernel.kernel

// -----

func.func @barrier_under_thread_if(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %warp = affine.apply affine_map<(d0) -> (d0 floordiv 32)> (%t)
    %c1 = arith.constant 1 : index
    %lead = arith.cmpi ult, %warp, %c1 : index
    scf.if %lead {
      kernel.barrier
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.barrier: under an scf.if whose condition depends on the thread; threads that skip the barrier deadlock the block

// -----

func.func @barrier_under_loaded_if(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %v = kernel.load %xb[%t] : memref<64xf32>
    %zero = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %v, %zero : f32
    scf.if %pos {
      kernel.barrier
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.barrier: under an scf.if whose condition depends on the thread; threads that skip the barrier deadlock the block

// -----

func.func @barrier_in_strided_loop(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(32, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    kernel.for %i = %t to 48 step 32 {
      kernel.barrier
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.barrier: inside a kernel.for whose trip count depends on the thread

// -----

func.func @shuffle_offset(%x: tensor<32xf32>) -> tensor<32xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(32, 1, 1) ins(%xb = %x : tensor<32xf32>) outs(%yb : tensor<32xf32>) {
    %t = kernel.thread_id x
    %v = kernel.load %xb[%t] : memref<32xf32>
    %s = kernel.shfl_xor %v, 3 : f32
  }
  func.return %y : tensor<32xf32>
}

// CHECK: kernel.shfl_xor: lane offset 3 must be a power of two below 32

// -----

func.func @shuffle_whole_warp(%x: tensor<32xf32>) -> tensor<32xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(32, 1, 1) ins(%xb = %x : tensor<32xf32>) outs(%yb : tensor<32xf32>) {
    %t = kernel.thread_id x
    %v = kernel.load %xb[%t] : memref<32xf32>
    %s = kernel.shfl_xor %v, 32 : f32
  }
  func.return %y : tensor<32xf32>
}

// CHECK: kernel.shfl_xor: lane offset 32 must be a power of two below 32

// -----

func.func @zero_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(4, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    kernel.for %i = %c0 to 4 step 0 {
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.for: step 0 must be positive

// -----

func.func @reduce_without_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(1, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %s = kernel.for %i = %c0 to 4 step 1 reduce(max) -> f32 {
      %v = kernel.load %xb[%i] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.for: a reduce loop must yield one value per accumulator

// -----

func.func @unknown_reduce_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(1, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %s = kernel.for %i = %c0 to 4 step 1 reduce(avg) -> f32 {
      %v = kernel.load %xb[%i] : memref<4xf32>
      kernel.yield %v : f32
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.for: unknown reduction kind 'avg' (known: add, mul, max, min, online_max, online_sum)

// -----

func.func @load_out_of_bounds(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(128, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %v = kernel.load %xb[%t] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.load: index 0 ranges over [0, 127], outside the buffer's extent 64

// -----

func.func @store_out_of_bounds(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(2, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %b = kernel.block_id x
    %v = kernel.load %xb[%t] : memref<64xf32>
    kernel.store %v, %yb[%b * 64 + %t] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.store: index 0 ranges over [0, 127], outside the buffer's extent 64

// -----

func.func @store_wrong_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(4, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    %t = kernel.thread_id x
    %h = arith.constant 1.0 : f16
    "kernel.store"(%h, %yb, %t) <{map = affine_map<(d0) -> (d0)>}> : (f16, memref<4xf32>, index) -> ()
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.store: stores f16 into a buffer of f32

// -----

func.func @load_wrong_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(4, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    %t = kernel.thread_id x
    %v = "kernel.load"(%xb, %t) <{map = affine_map<(d0) -> (d0)>}> : (memref<4xf32>, index) -> f16
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.load: result type differs from the buffer's elements

// -----

func.func @cp_async_to_global(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    kernel.cp_async %xb[%t] -> %yb[%t] : memref<64xf32> -> memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.cp_async: the target must be a kernel.shared array

// -----

func.func @cp_async_other_elements(%x: tensor<64xf16>) -> tensor<64xf16> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf16>) outs(%yb : tensor<64xf16>) {
    %t = kernel.thread_id x
    %s = kernel.shared "x_smem" : memref<64xf32>
    kernel.cp_async %xb[%t] -> %s[%t] : memref<64xf16> -> memref<64xf32>
  }
  func.return %y : tensor<64xf16>
}

// CHECK: kernel.cp_async: copies between buffers of different elements

// -----

func.func @cp_async_out_of_bounds(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %s = kernel.shared "x_smem" : memref<32xf32>
    kernel.cp_async %xb[%t] -> %s[%t] : memref<64xf32> -> memref<32xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.cp_async: index 0 ranges over [0, 63], outside the buffer's extent 32

// -----

func.func @cp_async_wait_uncommitted(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %s = kernel.shared "x_smem" : memref<64xf32>
    kernel.cp_async %xb[%t] -> %s[%t] : memref<64xf32> -> memref<64xf32>
    kernel.cp_async_commit
    kernel.cp_async %xb[%t] -> %s[%t] : memref<64xf32> -> memref<64xf32>
    kernel.cp_async_wait 0
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.cp_async_wait: cp.async copies before it are not committed (kernel.cp_async_commit closes their group; a wait never covers an open group)

// -----

func.func @cp_async_wait_no_group(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    kernel.cp_async_wait 0
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.cp_async_wait: no committed cp.async group to wait for

// -----

func.func @cp_async_wait_negative(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %s = kernel.shared "x_smem" : memref<64xf32>
    kernel.cp_async %xb[%t] -> %s[%t] : memref<64xf32> -> memref<64xf32>
    kernel.cp_async_commit
    kernel.cp_async_wait -1
  }
  func.return %y : tensor<64xf32>
}

// CHECK: kernel.cp_async_wait: the pending count must not be negative

// -----

func.func @shuffle_in_a_partial_warp(%x: tensor<33xf32>) -> tensor<33xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(33, 1, 1) ins(%xb = %x : tensor<33xf32>) outs(%yb : tensor<33xf32>) {
    %t = kernel.thread_id x
    %v = kernel.load %xb[%t] : memref<33xf32>
    %s = kernel.shfl_xor %v, 16 : f32
  }
  func.return %y : tensor<33xf32>
}

// CHECK: kernel.kernel: block (33, 1, 1) has 33 threads, not whole warps of 32, but kernel.shfl_xor exchanges across whole warps

// -----

func.func @block_z_over_64(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(1, 1, 128) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.kernel: block (1, 1, 128) exceeds CUDA's limits (1024, 1024, 64) per dimension

// -----

func.func @grid_y_over_65535(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 70000, 1) block(32, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.kernel: grid (1, 70000, 1) exceeds CUDA's limits (2147483647, 65535, 65535) per dimension

// -----

func.func @schedule_attribute_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(32, 1, 1) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) attributes {schedule = 0 : i64} {
  }
  func.return %y : tensor<4xf32>
}

// CHECK: kernel.kernel: attribute schedule must be a #tile.schedule, got 0 : i64
