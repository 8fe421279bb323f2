// RUN: deplo-opt %s -p materialize | filecheck %s

// 16 threads to a row, four rows to a block: the combine stays inside each half-warp,
// shuffles over offsets 8, 4, 2, 1 only, with no shared memory and no barrier.
func.func @half_warp(%x: tensor<32x64xf32>) -> tensor<32xf32> {
  %y = tile.kernel @k_half_warp axes(%b : 8 = block, %r : 4 = thread, %t : 16 = thread) ins(%xb = %x : tensor<32x64xf32>) outs(%yb : tensor<32xf32>) {
    %p = tile.strided_for %k = %t to 64 step 16 reduce(max) -> f32 {
      %v = loop.load %xb[%b * 4 + %r, %k] : memref<32x64xf32>
      loop.yield %v : f32
    }
    %m = tile.combine max %p across %t : f32
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      loop.store %m, %yb[%b * 4 + %r] : memref<32xf32>
    }
  }
  func.return %y : tensor<32xf32>
}

// CHECK-LABEL: func.func @half_warp
// CHECK:       kernel.kernel @k_half_warp grid(8, 1, 1) block(64, 1, 1)
// CHECK-NOT:   kernel.shared
// CHECK:       %tid = kernel.thread_id x
// CHECK-NEXT:  %b = kernel.block_id x
// CHECK-NEXT:  %r = affine.apply affine_map<(d0) -> ((d0 floordiv 16))> (%tid)
// CHECK-NEXT:  %t = affine.apply affine_map<(d0) -> ((d0 mod 16))> (%tid)
// CHECK:       %m_x8 = kernel.shfl_xor %p, 8 : f32
// CHECK-NEXT:  %m_w = arith.maximumf %p, %m_x8 : f32
// CHECK-NEXT:  %m_x4 = kernel.shfl_xor %m_w, 4 : f32
// CHECK:       %m_x1 = kernel.shfl_xor %m_w_2, 1 : f32
// CHECK-NEXT:  %m_w_3 = arith.maximumf %m_w_2, %m_x1 : f32
// CHECK-NOT:   kernel.barrier
// CHECK:       kernel.store %m_w_3, %yb[%b * 4 + %r] : memref<32xf32>

// 96 threads to a row, two rows to a block: three warps a group, so after the one
// barrier each thread combines its own group's three slots, in slot order.
func.func @groups(%x: tensor<2x384xf32>) -> tensor<2xf32> {
  %y = tile.kernel @k_groups axes(%r : 2 = thread, %t : 96 = thread) ins(%xb = %x : tensor<2x384xf32>) outs(%yb : tensor<2xf32>) {
    %p = tile.strided_for %k = %t to 384 step 96 reduce(add) -> f32 {
      %v = loop.load %xb[%r, %k] : memref<2x384xf32>
      loop.yield %v : f32
    }
    %s = tile.combine add %p across %t : f32
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      loop.store %s, %yb[%r] : memref<2xf32>
    }
  }
  func.return %y : tensor<2xf32>
}

// CHECK-LABEL: func.func @groups
// CHECK:       kernel.kernel @k_groups grid(1, 1, 1) block(192, 1, 1)
// CHECK-NEXT:    %s_smem = kernel.shared "s_smem" : memref<6xf32>
// CHECK:         %s_w_4 = arith.addf %s_w_3, %s_x1 : f32
// CHECK:         kernel.store %s_w_4, %s_smem[%warp] : memref<6xf32>
// CHECK:         kernel.barrier
// CHECK-NEXT:    %s_p0 = kernel.load %s_smem[%warp floordiv 3 * 3] : memref<6xf32>
// CHECK-NEXT:    %s_p1 = kernel.load %s_smem[%warp floordiv 3 * 3 + 1] : memref<6xf32>
// CHECK-NEXT:    %s_s1 = arith.addf %s_p0, %s_p1 : f32
// CHECK-NEXT:    %s_p2 = kernel.load %s_smem[%warp floordiv 3 * 3 + 2] : memref<6xf32>
// CHECK-NEXT:    %s = arith.addf %s_s1, %s_p2 : f32
// CHECK-NOT:     kernel.barrier

// A combine that runs once per iteration of a (uniform) loop ends with a barrier, so the
// next iteration's writes to the shared slots cannot overtake a slow thread's read.
func.func @in_loop(%x: tensor<4x256xf32>) -> tensor<4xf32> {
  %y = tile.kernel @k_in_loop axes(%t : 64 = thread) ins(%xb = %x : tensor<4x256xf32>) outs(%yb : tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    loop.for %i = 0 to 4 {
      %p = tile.strided_for %k = %t to 256 step 64 reduce(add) -> f32 {
        %v = loop.load %xb[%i, %k] : memref<4x256xf32>
        loop.yield %v : f32
      }
      %s = tile.combine add %p across %t : f32
      scf.if %first {
        loop.store %s, %yb[%i] : memref<4xf32>
      }
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @in_loop
// CHECK:         kernel.for %i = %c0_1 to 4 step 1 {
// CHECK:           %s = arith.addf %s_p0, %s_p1 : f32
// CHECK-NEXT:      kernel.barrier
// CHECK-NEXT:      scf.if %first {
