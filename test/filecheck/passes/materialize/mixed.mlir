// RUN: deplo-opt %s -p materialize | filecheck %s

// torch.matmul's K loop: w[k, n]'s slab in the source's order (async-copy marked it),
// x[m, k]'s transposed (filled by loads). Materialize rotates it with both: cp.async for
// ws, register prefetch for xs, one barrier an iteration. The prologue copies chunk 0 of
// ws (committed) and fills xs's; each iteration waits for its chunk's copies and passes
// the barrier (chunk k whole; every thread done with chunk k - 1), copies chunk k + 1 of
// ws into the other buffer behind a guard, commits, loads xs's chunk k + 1 into
// registers, computes, and stores those registers into the other buffer.

func.func @mixed(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %y = tile.kernel @k_mixed axes(%m_b : 2 = block, %m : 32 = thread, %n : 16 = thread) ins(%xb = %x : tensor<64x32xf32>, %wb = %w : tensor<32x16xf32>) outs(%yb : tensor<64x16xf32>) {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 attributes {pipeline} {
      %ws = tile.stage %wb[%ko * 8, 0] box [8, 16] buffers 2 async : memref<32x16xf32> -> memref<8x16xf32>
      %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] transpose buffers 2 : memref<64x32xf32> -> memref<8x32xf32>
      %part = loop.for %ki = 0 to 8 reduce(add) -> f32 {
        %a = loop.load %xs[%ki, %m] : memref<8x32xf32>
        %b = loop.load %ws[%ki, %n] : memref<8x16xf32>
        %p = arith.mulf %a, %b : f32
        loop.yield %p : f32
      }
      loop.yield %part : f32
    }
    %row = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)> (%m_b, %m)
    loop.store %acc, %yb[%row, %n] : memref<64x16xf32>
  }
  func.return %y : tensor<64x16xf32>
}

// CHECK-LABEL: func.func @mixed
// CHECK:         %xs_regs = kernel.local "xs_regs" : memref<4xf32>
// CHECK:         kernel.for %ws_flat = %tid to 128 step 512 vector 4 {
// CHECK-NEXT:      kernel.cp_async %wb[%c0 * 8 + %ws_flat floordiv 16, %ws_flat mod 16] -> %ws[%c0,
// CHECK:         kernel.cp_async_commit
// CHECK-NEXT:    kernel.for %xs_flat = %tid to 256 step 512 vector 4 {
// CHECK-NEXT:      %xs_v = kernel.load %xb
// CHECK-NEXT:      kernel.store %xs_v, %xs[%c0, %xs_flat mod 8, %xs_flat floordiv 8]
// CHECK:         %acc = kernel.for %ko = %c0_1 to 4 step 1 reduce(add) -> f32 attributes {pipeline} {
// CHECK:           kernel.cp_async_wait 0
// CHECK-NEXT:      kernel.barrier
// CHECK-NEXT:      scf.if %more {
// CHECK-NEXT:        kernel.for %ws_flat_1 = %tid to 128 step 512 vector 4 {
// CHECK-NEXT:          kernel.cp_async {{.*}} -> %ws[%buf_next,
// CHECK:           kernel.cp_async_commit
// CHECK-NEXT:      kernel.for %xs_flat_1 = %tid to 256 step 512 vector 4 {
// CHECK-NEXT:        %xs_v_1 = kernel.load %xb[%m_b * 32 + %xs_flat_1 floordiv 8, %ko_next * 8 + %xs_flat_1 mod 8]
// CHECK-NEXT:        kernel.store %xs_v_1, %xs_regs[%xs_flat_1 mod 4]
// CHECK:           %part = kernel.for %ki
// CHECK-NEXT:        %a = kernel.load %xs[%buf, %ki, %m]
// CHECK-NEXT:        %b = kernel.load %ws[%buf, %ki, %n]
// CHECK:           kernel.for %xs_flat_st = %tid to 256 step 512 vector 4 {
// CHECK-NEXT:        %xs_r = kernel.load %xs_regs[%xs_flat_st mod 4]
// CHECK-NEXT:        kernel.store %xs_r, %xs[%buf_next, %xs_flat_st mod 8, %xs_flat_st floordiv 8]
// CHECK-NEXT:      }
// CHECK-NEXT:      kernel.yield %part : f32
// CHECK-NOT:     kernel.barrier
