// RUN: deplo-opt %s -p register-tile | filecheck %s
// RUN: deplo-opt %s -p 'register-tile{tm=4 tn=4 threads_m=8 threads_n=8 bk=33},chunk-matmul-k,blockify-launch,stage-inputs' | filecheck %s --check-prefix=WHOLE
// RUN: deplo-opt %s -p 'register-tile{tm=4 tn=4 threads_m=8 threads_n=8 bk=8},chunk-matmul-k' | filecheck %s --check-prefix=CHUNKS

// A batch of 3 products of 32 x 33 by 33 x 31 (torch.bmm), as tileify leaves it: issue
// 19's bmm/small at a batch the CPU runs. The planner gives so few products its 16 x 16
// tile (2 x 2 in 8 x 8 threads: more blocks for the SMs), N padded to 32 (the loads and
// stores of column 31 on guarded), and K's 33 one chunk (whole_k: short K is staged
// whole). A whole block tile given by options (a sweep's variant) pads as the planner's
// does: bmm/small's 32 x 32 tile (4 x 4 in 8 x 8 threads) with its chunk of the whole K
// makes one K-outer trip whose slabs are both operands' whole 33 rows, the one of w
// guarded (N = 31); with a chunk of 8, K is padded to 40 (5 chunks) and every load of
// the K loop is guarded.

func.func @forward(%x: tensor<3x32x33xf32>, %x1: tensor<3x33x31xf32>) -> tensor<3x32x31xf32> {
  %bmm = tile.kernel @k_bmm axes(%a0 : 3 = free, %a1 : 32 = free, %a2 : 31 = free) ins(%x_b = %x : tensor<3x32x33xf32>, %x1_b = %x1 : tensor<3x33x31xf32>) outs(%bmm_b : tensor<3x32x31xf32>) {
    %acc = loop.for %a3 = 0 to 33 reduce(add) -> f32 {
      %in = loop.load %x_b[%a0, %a1, %a3] : memref<3x32x33xf32>
      %in_1 = loop.load %x1_b[%a0, %a3, %a2] : memref<3x33x31xf32>
      %in_2 = arith.mulf %in, %in_1 : f32
      loop.yield %in_2 : f32
    }
    loop.store %acc, %bmm_b[%a0, %a1, %a2] : memref<3x32x31xf32>
  }
  func.return %bmm : tensor<3x32x31xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       tile.kernel @k_bmm axes(%a0 : 3 = free, %a1_g : 16 = free, %a2_g : 16 = free)
// CHECK-SAME:  schedule = #tile.schedule<thread = [2, 2], threads = [8, 8], k_chunk = 33>
// CHECK:       loop.for %a3 = 0 to 33 reduce(add, add, add, add)
// CHECK-NEXT:    %in_r0 = loop.load %x_b[%a0, %a1_r0, %a3] : memref<3x32x33xf32>
// CHECK-NEXT:    %in_c0 = loop.load %x1_b[%a0, %a3, %a2_c0] guarded : memref<3x33x31xf32>
// CHECK:       loop.store %{{.*}}, %bmm_b[%a0, %a1_r0, %a2_c0] guarded : memref<3x32x31xf32>

// WHOLE:       tile.kernel @k_bmm axes(%a0 : 3 = block, %a1_g : 8 = thread, %a2_g : 8 = thread)
// WHOLE-SAME:  schedule = #tile.schedule<thread = [4, 4], threads = [8, 8], k_chunk = 33>
// WHOLE:       loop.for %a3_o = 0 to 1 reduce(
// WHOLE-NEXT:    tile.stage %x1_b[%a0, %a3_o * 33, 0] guarded : memref<3x33x31xf32> -> memref<33x32xf32>
// WHOLE-NEXT:    tile.stage %x_b[%a0, 0, %a3_o * 33] box [32, 33] transpose : memref<3x32x33xf32> -> memref<33x32xf32>
// WHOLE-NEXT:    loop.for %a3_i = 0 to 33 reduce(

// CHUNKS:      tile.kernel @k_bmm axes(%a0 : 3 = free, %a1_g : 8 = free, %a2_g : 8 = free)
// CHUNKS-SAME: schedule = #tile.schedule<thread = [4, 4], threads = [8, 8], k_chunk = 8>
// CHUNKS:      loop.for %a3_o = 0 to 5 reduce(
// CHUNKS-NEXT:   loop.for %a3_i = 0 to 8 reduce(
// CHUNKS:          %in_r0 = loop.load %x_b[%a0, %a1_r0, %a3] guarded : memref<3x32x33xf32>
// CHUNKS-NEXT:     %in_c0 = loop.load %x1_b[%a0, %a3, %a2_c0] guarded : memref<3x33x31xf32>
