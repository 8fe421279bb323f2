// RUN: deplo-opt %s -p permute-register-tile | filecheck %s
// RUN: deplo-opt %s -p permute-register-tile,permute-register-tile | filecheck %s
// RUN: deplo-opt %s -p 'permute-register-tile{strip=2}' | filecheck %s --check-prefix=TWO
// RUN: deplo-opt %s -p 'permute-register-tile{strip=3}' | filecheck %s --check-prefix=LEFT
// RUN: deplo-opt %s -p 'permute-register-tile{strip=8}' | filecheck %s --check-prefix=LEFT
// RUN: not deplo-opt %s -p 'permute-register-tile{strip=0}' 2>&1 | filecheck %s --check-prefix=ZERO

// linear (1,128,64) x (256,64)^T after
// tileify,register-tile{tm=8 tn=8 threads_m=16 threads_n=16},blockify-launch: thread t of
// column block nb owns columns (nb*16 + t)*8 + j, j < 8. The pass deals them out in
// float4 strips: n_j = nb*128 + (j floordiv 4)*64 + t*4 + (j mod 4), so adjacent threads'
// strips are adjacent. The rows and the loads are unchanged (they use %a1_c<j>). The
// second RUN line: idempotent. strip=2: strips of 2 columns, 32 apart. A strip that does
// not divide TN (3), or is all of it (8), leaves the columns alone; strip=0 is an error.

func.func @forward(%x: tensor<1x128x64xf32>, %x1: tensor<256x64xf32>) -> tensor<1x128x256xf32> {
  %linear = tile.kernel @k_linear axes(%a0_g : 16 = thread, %a1_g_b : 2 = block, %a1_g_t : 16 = thread) ins(%x_b = %x : tensor<1x128x64xf32>, %x1_b = %x1 : tensor<256x64xf32>) outs(%linear_b : tensor<1x128x256xf32>) attributes {covers = ["linear"], schedule = #tile.schedule<thread = [8, 8], threads = [16, 16], k_chunk = 8>} {
    %a1_g = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a1_g_b, %a1_g_t)
    %a0_r0 = affine.apply affine_map<(d0) -> ((d0 * 8))> (%a0_g)
    %a0_r1 = affine.apply affine_map<(d0) -> (((d0 * 8) + 1))> (%a0_g)
    %a0_r2 = affine.apply affine_map<(d0) -> (((d0 * 8) + 2))> (%a0_g)
    %a0_r3 = affine.apply affine_map<(d0) -> (((d0 * 8) + 3))> (%a0_g)
    %a0_r4 = affine.apply affine_map<(d0) -> (((d0 * 8) + 4))> (%a0_g)
    %a0_r5 = affine.apply affine_map<(d0) -> (((d0 * 8) + 5))> (%a0_g)
    %a0_r6 = affine.apply affine_map<(d0) -> (((d0 * 8) + 6))> (%a0_g)
    %a0_r7 = affine.apply affine_map<(d0) -> (((d0 * 8) + 7))> (%a0_g)
    %a1_c0 = affine.apply affine_map<(d0) -> ((d0 * 8))> (%a1_g)
    %a1_c1 = affine.apply affine_map<(d0) -> (((d0 * 8) + 1))> (%a1_g)
    %a1_c2 = affine.apply affine_map<(d0) -> (((d0 * 8) + 2))> (%a1_g)
    %a1_c3 = affine.apply affine_map<(d0) -> (((d0 * 8) + 3))> (%a1_g)
    %a1_c4 = affine.apply affine_map<(d0) -> (((d0 * 8) + 4))> (%a1_g)
    %a1_c5 = affine.apply affine_map<(d0) -> (((d0 * 8) + 5))> (%a1_g)
    %a1_c6 = affine.apply affine_map<(d0) -> (((d0 * 8) + 6))> (%a1_g)
    %a1_c7 = affine.apply affine_map<(d0) -> (((d0 * 8) + 7))> (%a1_g)
    %linear_r0c0, %linear_r0c1, %linear_r0c2, %linear_r0c3, %linear_r0c4, %linear_r0c5, %linear_r0c6, %linear_r0c7, %linear_r1c0, %linear_r1c1, %linear_r1c2, %linear_r1c3, %linear_r1c4, %linear_r1c5, %linear_r1c6, %linear_r1c7, %linear_r2c0, %linear_r2c1, %linear_r2c2, %linear_r2c3, %linear_r2c4, %linear_r2c5, %linear_r2c6, %linear_r2c7, %linear_r3c0, %linear_r3c1, %linear_r3c2, %linear_r3c3, %linear_r3c4, %linear_r3c5, %linear_r3c6, %linear_r3c7, %linear_r4c0, %linear_r4c1, %linear_r4c2, %linear_r4c3, %linear_r4c4, %linear_r4c5, %linear_r4c6, %linear_r4c7, %linear_r5c0, %linear_r5c1, %linear_r5c2, %linear_r5c3, %linear_r5c4, %linear_r5c5, %linear_r5c6, %linear_r5c7, %linear_r6c0, %linear_r6c1, %linear_r6c2, %linear_r6c3, %linear_r6c4, %linear_r6c5, %linear_r6c6, %linear_r6c7, %linear_r7c0, %linear_r7c1, %linear_r7c2, %linear_r7c3, %linear_r7c4, %linear_r7c5, %linear_r7c6, %linear_r7c7 = loop.for %a2 = 0 to 64 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
      %in_r0 = loop.load %x_b[0, %a0_r0, %a2] : memref<1x128x64xf32>
      %in_c0 = loop.load %x1_b[%a1_c0, %a2] : memref<256x64xf32>
      %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
      %in_c1 = loop.load %x1_b[%a1_c1, %a2] : memref<256x64xf32>
      %in_r0c1 = arith.mulf %in_r0, %in_c1 : f32
      %in_c2 = loop.load %x1_b[%a1_c2, %a2] : memref<256x64xf32>
      %in_r0c2 = arith.mulf %in_r0, %in_c2 : f32
      %in_c3 = loop.load %x1_b[%a1_c3, %a2] : memref<256x64xf32>
      %in_r0c3 = arith.mulf %in_r0, %in_c3 : f32
      %in_c4 = loop.load %x1_b[%a1_c4, %a2] : memref<256x64xf32>
      %in_r0c4 = arith.mulf %in_r0, %in_c4 : f32
      %in_c5 = loop.load %x1_b[%a1_c5, %a2] : memref<256x64xf32>
      %in_r0c5 = arith.mulf %in_r0, %in_c5 : f32
      %in_c6 = loop.load %x1_b[%a1_c6, %a2] : memref<256x64xf32>
      %in_r0c6 = arith.mulf %in_r0, %in_c6 : f32
      %in_c7 = loop.load %x1_b[%a1_c7, %a2] : memref<256x64xf32>
      %in_r0c7 = arith.mulf %in_r0, %in_c7 : f32
      %in_r1 = loop.load %x_b[0, %a0_r1, %a2] : memref<1x128x64xf32>
      %in_r1c0 = arith.mulf %in_r1, %in_c0 : f32
      %in_r1c1 = arith.mulf %in_r1, %in_c1 : f32
      %in_r1c2 = arith.mulf %in_r1, %in_c2 : f32
      %in_r1c3 = arith.mulf %in_r1, %in_c3 : f32
      %in_r1c4 = arith.mulf %in_r1, %in_c4 : f32
      %in_r1c5 = arith.mulf %in_r1, %in_c5 : f32
      %in_r1c6 = arith.mulf %in_r1, %in_c6 : f32
      %in_r1c7 = arith.mulf %in_r1, %in_c7 : f32
      %in_r2 = loop.load %x_b[0, %a0_r2, %a2] : memref<1x128x64xf32>
      %in_r2c0 = arith.mulf %in_r2, %in_c0 : f32
      %in_r2c1 = arith.mulf %in_r2, %in_c1 : f32
      %in_r2c2 = arith.mulf %in_r2, %in_c2 : f32
      %in_r2c3 = arith.mulf %in_r2, %in_c3 : f32
      %in_r2c4 = arith.mulf %in_r2, %in_c4 : f32
      %in_r2c5 = arith.mulf %in_r2, %in_c5 : f32
      %in_r2c6 = arith.mulf %in_r2, %in_c6 : f32
      %in_r2c7 = arith.mulf %in_r2, %in_c7 : f32
      %in_r3 = loop.load %x_b[0, %a0_r3, %a2] : memref<1x128x64xf32>
      %in_r3c0 = arith.mulf %in_r3, %in_c0 : f32
      %in_r3c1 = arith.mulf %in_r3, %in_c1 : f32
      %in_r3c2 = arith.mulf %in_r3, %in_c2 : f32
      %in_r3c3 = arith.mulf %in_r3, %in_c3 : f32
      %in_r3c4 = arith.mulf %in_r3, %in_c4 : f32
      %in_r3c5 = arith.mulf %in_r3, %in_c5 : f32
      %in_r3c6 = arith.mulf %in_r3, %in_c6 : f32
      %in_r3c7 = arith.mulf %in_r3, %in_c7 : f32
      %in_r4 = loop.load %x_b[0, %a0_r4, %a2] : memref<1x128x64xf32>
      %in_r4c0 = arith.mulf %in_r4, %in_c0 : f32
      %in_r4c1 = arith.mulf %in_r4, %in_c1 : f32
      %in_r4c2 = arith.mulf %in_r4, %in_c2 : f32
      %in_r4c3 = arith.mulf %in_r4, %in_c3 : f32
      %in_r4c4 = arith.mulf %in_r4, %in_c4 : f32
      %in_r4c5 = arith.mulf %in_r4, %in_c5 : f32
      %in_r4c6 = arith.mulf %in_r4, %in_c6 : f32
      %in_r4c7 = arith.mulf %in_r4, %in_c7 : f32
      %in_r5 = loop.load %x_b[0, %a0_r5, %a2] : memref<1x128x64xf32>
      %in_r5c0 = arith.mulf %in_r5, %in_c0 : f32
      %in_r5c1 = arith.mulf %in_r5, %in_c1 : f32
      %in_r5c2 = arith.mulf %in_r5, %in_c2 : f32
      %in_r5c3 = arith.mulf %in_r5, %in_c3 : f32
      %in_r5c4 = arith.mulf %in_r5, %in_c4 : f32
      %in_r5c5 = arith.mulf %in_r5, %in_c5 : f32
      %in_r5c6 = arith.mulf %in_r5, %in_c6 : f32
      %in_r5c7 = arith.mulf %in_r5, %in_c7 : f32
      %in_r6 = loop.load %x_b[0, %a0_r6, %a2] : memref<1x128x64xf32>
      %in_r6c0 = arith.mulf %in_r6, %in_c0 : f32
      %in_r6c1 = arith.mulf %in_r6, %in_c1 : f32
      %in_r6c2 = arith.mulf %in_r6, %in_c2 : f32
      %in_r6c3 = arith.mulf %in_r6, %in_c3 : f32
      %in_r6c4 = arith.mulf %in_r6, %in_c4 : f32
      %in_r6c5 = arith.mulf %in_r6, %in_c5 : f32
      %in_r6c6 = arith.mulf %in_r6, %in_c6 : f32
      %in_r6c7 = arith.mulf %in_r6, %in_c7 : f32
      %in_r7 = loop.load %x_b[0, %a0_r7, %a2] : memref<1x128x64xf32>
      %in_r7c0 = arith.mulf %in_r7, %in_c0 : f32
      %in_r7c1 = arith.mulf %in_r7, %in_c1 : f32
      %in_r7c2 = arith.mulf %in_r7, %in_c2 : f32
      %in_r7c3 = arith.mulf %in_r7, %in_c3 : f32
      %in_r7c4 = arith.mulf %in_r7, %in_c4 : f32
      %in_r7c5 = arith.mulf %in_r7, %in_c5 : f32
      %in_r7c6 = arith.mulf %in_r7, %in_c6 : f32
      %in_r7c7 = arith.mulf %in_r7, %in_c7 : f32
      loop.yield %in_r0c0, %in_r0c1, %in_r0c2, %in_r0c3, %in_r0c4, %in_r0c5, %in_r0c6, %in_r0c7, %in_r1c0, %in_r1c1, %in_r1c2, %in_r1c3, %in_r1c4, %in_r1c5, %in_r1c6, %in_r1c7, %in_r2c0, %in_r2c1, %in_r2c2, %in_r2c3, %in_r2c4, %in_r2c5, %in_r2c6, %in_r2c7, %in_r3c0, %in_r3c1, %in_r3c2, %in_r3c3, %in_r3c4, %in_r3c5, %in_r3c6, %in_r3c7, %in_r4c0, %in_r4c1, %in_r4c2, %in_r4c3, %in_r4c4, %in_r4c5, %in_r4c6, %in_r4c7, %in_r5c0, %in_r5c1, %in_r5c2, %in_r5c3, %in_r5c4, %in_r5c5, %in_r5c6, %in_r5c7, %in_r6c0, %in_r6c1, %in_r6c2, %in_r6c3, %in_r6c4, %in_r6c5, %in_r6c6, %in_r6c7, %in_r7c0, %in_r7c1, %in_r7c2, %in_r7c3, %in_r7c4, %in_r7c5, %in_r7c6, %in_r7c7 : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
    }
    loop.store %linear_r0c0, %linear_b[0, %a0_r0, %a1_c0] : memref<1x128x256xf32>
    loop.store %linear_r0c1, %linear_b[0, %a0_r0, %a1_c1] : memref<1x128x256xf32>
    loop.store %linear_r0c2, %linear_b[0, %a0_r0, %a1_c2] : memref<1x128x256xf32>
    loop.store %linear_r0c3, %linear_b[0, %a0_r0, %a1_c3] : memref<1x128x256xf32>
    loop.store %linear_r0c4, %linear_b[0, %a0_r0, %a1_c4] : memref<1x128x256xf32>
    loop.store %linear_r0c5, %linear_b[0, %a0_r0, %a1_c5] : memref<1x128x256xf32>
    loop.store %linear_r0c6, %linear_b[0, %a0_r0, %a1_c6] : memref<1x128x256xf32>
    loop.store %linear_r0c7, %linear_b[0, %a0_r0, %a1_c7] : memref<1x128x256xf32>
    loop.store %linear_r1c0, %linear_b[0, %a0_r1, %a1_c0] : memref<1x128x256xf32>
    loop.store %linear_r1c1, %linear_b[0, %a0_r1, %a1_c1] : memref<1x128x256xf32>
    loop.store %linear_r1c2, %linear_b[0, %a0_r1, %a1_c2] : memref<1x128x256xf32>
    loop.store %linear_r1c3, %linear_b[0, %a0_r1, %a1_c3] : memref<1x128x256xf32>
    loop.store %linear_r1c4, %linear_b[0, %a0_r1, %a1_c4] : memref<1x128x256xf32>
    loop.store %linear_r1c5, %linear_b[0, %a0_r1, %a1_c5] : memref<1x128x256xf32>
    loop.store %linear_r1c6, %linear_b[0, %a0_r1, %a1_c6] : memref<1x128x256xf32>
    loop.store %linear_r1c7, %linear_b[0, %a0_r1, %a1_c7] : memref<1x128x256xf32>
    loop.store %linear_r2c0, %linear_b[0, %a0_r2, %a1_c0] : memref<1x128x256xf32>
    loop.store %linear_r2c1, %linear_b[0, %a0_r2, %a1_c1] : memref<1x128x256xf32>
    loop.store %linear_r2c2, %linear_b[0, %a0_r2, %a1_c2] : memref<1x128x256xf32>
    loop.store %linear_r2c3, %linear_b[0, %a0_r2, %a1_c3] : memref<1x128x256xf32>
    loop.store %linear_r2c4, %linear_b[0, %a0_r2, %a1_c4] : memref<1x128x256xf32>
    loop.store %linear_r2c5, %linear_b[0, %a0_r2, %a1_c5] : memref<1x128x256xf32>
    loop.store %linear_r2c6, %linear_b[0, %a0_r2, %a1_c6] : memref<1x128x256xf32>
    loop.store %linear_r2c7, %linear_b[0, %a0_r2, %a1_c7] : memref<1x128x256xf32>
    loop.store %linear_r3c0, %linear_b[0, %a0_r3, %a1_c0] : memref<1x128x256xf32>
    loop.store %linear_r3c1, %linear_b[0, %a0_r3, %a1_c1] : memref<1x128x256xf32>
    loop.store %linear_r3c2, %linear_b[0, %a0_r3, %a1_c2] : memref<1x128x256xf32>
    loop.store %linear_r3c3, %linear_b[0, %a0_r3, %a1_c3] : memref<1x128x256xf32>
    loop.store %linear_r3c4, %linear_b[0, %a0_r3, %a1_c4] : memref<1x128x256xf32>
    loop.store %linear_r3c5, %linear_b[0, %a0_r3, %a1_c5] : memref<1x128x256xf32>
    loop.store %linear_r3c6, %linear_b[0, %a0_r3, %a1_c6] : memref<1x128x256xf32>
    loop.store %linear_r3c7, %linear_b[0, %a0_r3, %a1_c7] : memref<1x128x256xf32>
    loop.store %linear_r4c0, %linear_b[0, %a0_r4, %a1_c0] : memref<1x128x256xf32>
    loop.store %linear_r4c1, %linear_b[0, %a0_r4, %a1_c1] : memref<1x128x256xf32>
    loop.store %linear_r4c2, %linear_b[0, %a0_r4, %a1_c2] : memref<1x128x256xf32>
    loop.store %linear_r4c3, %linear_b[0, %a0_r4, %a1_c3] : memref<1x128x256xf32>
    loop.store %linear_r4c4, %linear_b[0, %a0_r4, %a1_c4] : memref<1x128x256xf32>
    loop.store %linear_r4c5, %linear_b[0, %a0_r4, %a1_c5] : memref<1x128x256xf32>
    loop.store %linear_r4c6, %linear_b[0, %a0_r4, %a1_c6] : memref<1x128x256xf32>
    loop.store %linear_r4c7, %linear_b[0, %a0_r4, %a1_c7] : memref<1x128x256xf32>
    loop.store %linear_r5c0, %linear_b[0, %a0_r5, %a1_c0] : memref<1x128x256xf32>
    loop.store %linear_r5c1, %linear_b[0, %a0_r5, %a1_c1] : memref<1x128x256xf32>
    loop.store %linear_r5c2, %linear_b[0, %a0_r5, %a1_c2] : memref<1x128x256xf32>
    loop.store %linear_r5c3, %linear_b[0, %a0_r5, %a1_c3] : memref<1x128x256xf32>
    loop.store %linear_r5c4, %linear_b[0, %a0_r5, %a1_c4] : memref<1x128x256xf32>
    loop.store %linear_r5c5, %linear_b[0, %a0_r5, %a1_c5] : memref<1x128x256xf32>
    loop.store %linear_r5c6, %linear_b[0, %a0_r5, %a1_c6] : memref<1x128x256xf32>
    loop.store %linear_r5c7, %linear_b[0, %a0_r5, %a1_c7] : memref<1x128x256xf32>
    loop.store %linear_r6c0, %linear_b[0, %a0_r6, %a1_c0] : memref<1x128x256xf32>
    loop.store %linear_r6c1, %linear_b[0, %a0_r6, %a1_c1] : memref<1x128x256xf32>
    loop.store %linear_r6c2, %linear_b[0, %a0_r6, %a1_c2] : memref<1x128x256xf32>
    loop.store %linear_r6c3, %linear_b[0, %a0_r6, %a1_c3] : memref<1x128x256xf32>
    loop.store %linear_r6c4, %linear_b[0, %a0_r6, %a1_c4] : memref<1x128x256xf32>
    loop.store %linear_r6c5, %linear_b[0, %a0_r6, %a1_c5] : memref<1x128x256xf32>
    loop.store %linear_r6c6, %linear_b[0, %a0_r6, %a1_c6] : memref<1x128x256xf32>
    loop.store %linear_r6c7, %linear_b[0, %a0_r6, %a1_c7] : memref<1x128x256xf32>
    loop.store %linear_r7c0, %linear_b[0, %a0_r7, %a1_c0] : memref<1x128x256xf32>
    loop.store %linear_r7c1, %linear_b[0, %a0_r7, %a1_c1] : memref<1x128x256xf32>
    loop.store %linear_r7c2, %linear_b[0, %a0_r7, %a1_c2] : memref<1x128x256xf32>
    loop.store %linear_r7c3, %linear_b[0, %a0_r7, %a1_c3] : memref<1x128x256xf32>
    loop.store %linear_r7c4, %linear_b[0, %a0_r7, %a1_c4] : memref<1x128x256xf32>
    loop.store %linear_r7c5, %linear_b[0, %a0_r7, %a1_c5] : memref<1x128x256xf32>
    loop.store %linear_r7c6, %linear_b[0, %a0_r7, %a1_c6] : memref<1x128x256xf32>
    loop.store %linear_r7c7, %linear_b[0, %a0_r7, %a1_c7] : memref<1x128x256xf32>
  }
  func.return %linear : tensor<1x128x256xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       tile.kernel @k_linear axes(%a0_g : 16 = thread, %a1_g_b : 2 = block, %a1_g_t : 16 = thread)
// CHECK:       %a0_r0 = affine.apply affine_map<(d0) -> ((d0 * 8))> (%a0_g)
// CHECK:       %a0_r7 = affine.apply affine_map<(d0) -> (((d0 * 8) + 7))> (%a0_g)
// CHECK-NEXT:  %a1_c0 = affine.apply affine_map<(d0, d1) -> (((d0 * 128) + (d1 * 4)))> (%a1_g_b, %a1_g_t)
// CHECK-NEXT:  %a1_c1 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 4)) + 1))> (%a1_g_b, %a1_g_t)
// CHECK-NEXT:  %a1_c2 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 4)) + 2))> (%a1_g_b, %a1_g_t)
// CHECK-NEXT:  %a1_c3 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 4)) + 3))> (%a1_g_b, %a1_g_t)
// CHECK-NEXT:  %a1_c4 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 4)) + 64))> (%a1_g_b, %a1_g_t)
// CHECK-NEXT:  %a1_c5 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 4)) + 65))> (%a1_g_b, %a1_g_t)
// CHECK-NEXT:  %a1_c6 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 4)) + 66))> (%a1_g_b, %a1_g_t)
// CHECK-NEXT:  %a1_c7 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 4)) + 67))> (%a1_g_b, %a1_g_t)
// CHECK-NEXT:  loop.for %a2 = 0 to 64 reduce
// CHECK-NEXT:    %in_r0 = loop.load %x_b[0, %a0_r0, %a2] : memref<1x128x64xf32>
// CHECK-NEXT:    %in_c0 = loop.load %x1_b[%a1_c0, %a2] : memref<256x64xf32>
// CHECK:       loop.store %linear_r7c7, %linear_b[0, %a0_r7, %a1_c7]

// TWO:         %a1_c0 = affine.apply affine_map<(d0, d1) -> (((d0 * 128) + (d1 * 2)))> (%a1_g_b, %a1_g_t)
// TWO-NEXT:    %a1_c1 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 2)) + 1))> (%a1_g_b, %a1_g_t)
// TWO-NEXT:    %a1_c2 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 2)) + 32))> (%a1_g_b, %a1_g_t)
// TWO:         %a1_c7 = affine.apply affine_map<(d0, d1) -> ((((d0 * 128) + (d1 * 2)) + 97))> (%a1_g_b, %a1_g_t)

// LEFT:        %a1_c0 = affine.apply affine_map<(d0) -> ((d0 * 8))> (%a1_g)
// LEFT:        %a1_c7 = affine.apply affine_map<(d0) -> (((d0 * 8) + 7))> (%a1_g)

// ZERO:        permute-register-tile: strip=0 must be >= 1
