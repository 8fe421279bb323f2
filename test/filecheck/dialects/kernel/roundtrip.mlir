// RUN: deplo-opt %s | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// The kernel dialect's custom syntax: launch shape, ids, shared arrays, barriers, warp
// shuffles, counted loops (strided, reduce, unrolled), loads and stores; guards are
// upstream scf.if and index math affine.apply.

func.func @forward(%x: tensor<4x256xf32>) -> tensor<4xf32> {
  %y = kernel.kernel @k_row_sum grid(4, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<4x256xf32>) outs(%yb : tensor<4xf32>) {
    %smem = kernel.shared "s_smem" : memref<2xf32>
    %t = kernel.thread_id x
    %b = kernel.block_id x
    %warp = affine.apply affine_map<(d0) -> (d0 floordiv 32)> (%t)
    %p = kernel.for %k = %t to 256 step 64 reduce(add) -> f32 {
      %v = kernel.load %xb[%b, %k] : memref<4x256xf32>
      kernel.yield %v : f32
    }
    %x16 = kernel.shfl_xor %p, 16 : f32
    %w = arith.addf %p, %x16 : f32
    %lane = affine.apply affine_map<(d0) -> (d0 mod 32)> (%t)
    %c0 = arith.constant 0 : index
    %lane0 = arith.cmpi eq, %lane, %c0 : index
    scf.if %lane0 {
      kernel.store %w, %smem[%warp] : memref<2xf32>
    }
    kernel.barrier
    %s = kernel.load %smem[0] : memref<2xf32>
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      kernel.store %s, %yb[%b] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK:      %y = kernel.kernel @k_row_sum grid(4, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<4x256xf32>) outs(%yb : tensor<4xf32>) {
// CHECK-NEXT:   %smem = kernel.shared "s_smem" : memref<2xf32>
// CHECK-NEXT:   %t = kernel.thread_id x
// CHECK-NEXT:   %b = kernel.block_id x
// CHECK-NEXT:   %warp = affine.apply affine_map<(d0) -> ((d0 floordiv 32))> (%t)
// CHECK-NEXT:   %p = kernel.for %k = %t to 256 step 64 reduce(add) -> f32 {
// CHECK-NEXT:     %v = kernel.load %xb[%b, %k] : memref<4x256xf32>
// CHECK-NEXT:     kernel.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %x16 = kernel.shfl_xor %p, 16 : f32
// CHECK-NEXT:   %w = arith.addf %p, %x16 : f32
// CHECK-NEXT:   %lane = affine.apply affine_map<(d0) -> ((d0 mod 32))> (%t)
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %lane0 = arith.cmpi eq, %lane, %c0 : index
// CHECK-NEXT:   scf.if %lane0 {
// CHECK-NEXT:     kernel.store %w, %smem[%warp] : memref<2xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   kernel.barrier
// CHECK-NEXT:   %s = kernel.load %smem[0] : memref<2xf32>
// CHECK-NEXT:   %first = arith.cmpi eq, %t, %c0 : index
// CHECK-NEXT:   scf.if %first {
// CHECK-NEXT:     kernel.store %s, %yb[%b] : memref<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// Three-dimensional launch shapes and ids, an unrolled loop with several accumulators,
// a kernel attribute, and an index expression with floordiv and mod.
func.func @shapes(%x: tensor<8x8x2xf32>) -> tensor<8x8xf32> {
  %y = kernel.kernel @k_3d grid(2, 2, 1) block(4, 4, 2) ins(%xb = %x : tensor<8x8x2xf32>) outs(%yb : tensor<8x8xf32>) attributes {covers = ["y"]} {
    %tx = kernel.thread_id x
    %ty = kernel.thread_id y
    %tz = kernel.thread_id z
    %bx = kernel.block_id x
    %by = kernel.block_id y
    %c0 = arith.constant 0 : index
    %s, %m = kernel.for %k = %c0 to 2 step 1 reduce(add, max) -> (f32, f32) unroll 2 {
      %v = kernel.load %xb[%bx * 4 + %tx, %by * 4 + %ty, %k] : memref<8x8x2xf32>
      kernel.yield %v, %v : f32, f32
    }
    %d = arith.subf %s, %m : f32
    kernel.store %d, %yb[(%bx * 4 + %tx) floordiv 1, (%by * 4 + %ty) mod 8] : memref<8x8xf32>
  }
  func.return %y : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @shapes
// CHECK:       kernel.kernel @k_3d grid(2, 2, 1) block(4, 4, 2) ins(%xb = %x : tensor<8x8x2xf32>) outs(%yb : tensor<8x8xf32>) attributes {covers = ["y"]} {
// CHECK-NEXT:    %tx = kernel.thread_id x
// CHECK-NEXT:    %ty = kernel.thread_id y
// CHECK-NEXT:    %tz = kernel.thread_id z
// CHECK-NEXT:    %bx = kernel.block_id x
// CHECK-NEXT:    %by = kernel.block_id y
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %s, %m = kernel.for %k = %c0 to 2 step 1 reduce(add, max) -> (f32, f32) unroll 2 {
// CHECK-NEXT:      %v = kernel.load %xb[%bx * 4 + %tx, %by * 4 + %ty, %k] : memref<8x8x2xf32>
// CHECK-NEXT:      kernel.yield %v, %v : f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %d = arith.subf %s, %m : f32
// CHECK-NEXT:    kernel.store %d, %yb[(%bx * 4 + %tx) floordiv 1, (%by * 4 + %ty) mod 8] : memref<8x8xf32>

// cp.async: a transposed fill of a double-buffered slab (element [r, c] of a 16 x 4 source
// tile to [buffer, c, r] of the slab), the prologue's group committed; in the loop the next
// chunk's copy (guarded), commit, wait until one group is in flight, barrier.
func.func @copy_async(%x: tensor<16x8xf32>) -> tensor<16xf32> {
  %y = kernel.kernel @k_cp_async grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<16x8xf32>) outs(%yb : tensor<16xf32>) {
    %t = kernel.thread_id x
    %smem = kernel.shared "x_smem" : memref<2x4x20xf32>
    %c0 = arith.constant 0 : index
    kernel.cp_async %xb[%t floordiv 4, %t mod 4] -> %smem[%c0, %t mod 4, %t floordiv 4] : memref<16x8xf32> -> memref<2x4x20xf32>
    kernel.cp_async_commit
    %acc = kernel.for %ko = %c0 to 2 step 1 reduce(add) -> f32 {
      %buf = affine.apply affine_map<(d0) -> (d0 mod 2)> (%ko)
      %next = affine.apply affine_map<(d0) -> ((d0 + 1) mod 2)> (%ko)
      %c1 = arith.constant 1 : index
      %more = arith.cmpi ult, %ko, %c1 : index
      scf.if %more {
        kernel.cp_async %xb[%t floordiv 4, %next * 4 + %t mod 4] -> %smem[%next, %t mod 4, %t floordiv 4] : memref<16x8xf32> -> memref<2x4x20xf32>
      }
      kernel.cp_async_commit
      kernel.cp_async_wait 1
      kernel.barrier
      %v = kernel.load %smem[%buf, %t mod 4, %t floordiv 4] : memref<2x4x20xf32>
      kernel.barrier
      kernel.yield %v : f32
    }
    kernel.cp_async_wait 0
    kernel.store %acc, %yb[%t floordiv 4] : memref<16xf32>
  }
  func.return %y : tensor<16xf32>
}

// CHECK-LABEL: func.func @copy_async
// CHECK:       %smem = kernel.shared "x_smem" : memref<2x4x20xf32>
// CHECK-NEXT:  %c0 = arith.constant 0 : index
// CHECK-NEXT:  kernel.cp_async %xb[%t floordiv 4, %t mod 4] -> %smem[%c0, %t mod 4, %t floordiv 4] : memref<16x8xf32> -> memref<2x4x20xf32>
// CHECK-NEXT:  kernel.cp_async_commit
// CHECK-NEXT:  %acc = kernel.for %ko = %c0 to 2 step 1 reduce(add) -> f32 {
// CHECK:         scf.if %more {
// CHECK-NEXT:      kernel.cp_async %xb[%t floordiv 4, %next * 4 + %t mod 4] -> %smem[%next, %t mod 4, %t floordiv 4] : memref<16x8xf32> -> memref<2x4x20xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.cp_async_commit
// CHECK-NEXT:    kernel.cp_async_wait 1
// CHECK-NEXT:    kernel.barrier
// CHECK:       kernel.cp_async_wait 0
// CHECK-NEXT:  kernel.store %acc, %yb[%t floordiv 4] : memref<16xf32>
