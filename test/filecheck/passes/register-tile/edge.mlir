// RUN: deplo-opt %s -p register-tile | filecheck %s
// RUN: deplo-opt %s -p register-tile,chunk-matmul-k,blockify-launch,stage-inputs | filecheck %s --check-prefix=STAGE
// RUN: deplo-opt %s -p 'register-tile{tm=4 tn=4}' | filecheck %s --check-prefix=GIVEN
// RUN: deplo-opt %s -p 'register-tile{tm=4 tn=4 threads_m=8 threads_n=16 bk=16}' | filecheck %s

// linear (100 x 67) x (250 x 67)^T + b, as tileify leaves it: no tile of the planner
// divides 100, 250 or 67. The planner's 32 x 64 tile (4 x 4 a thread, K chunks of 16)
// pads the axes to 128 x 256 (32 x 64 threads' tiles) and K to 80; every access that may
// leave its buffer is guarded (the operands' loads, the bias's, the store), so the
// padded rows read zeros and store nothing. stage-inputs (after chunk-matmul-k and
// blockify-launch) then stages guarded K chunks whose boxes reach past the operands'
// ends; the loads from shared memory need no guard. A register tile given by options
// alone does not pad: 4 divides 100 but not 250, so only the rows are tiled, as before
// edge tiles; a whole block tile given by options (threads and K chunk: a sweep's
// variant, here the planner's own) pads as the planner's does.

func.func @forward(%x: tensor<100x67xf32>, %x1: tensor<250x67xf32>, %x2: tensor<250xf32>) -> tensor<100x250xf32> {
  %linear = tile.kernel @k_linear axes(%a0 : 100 = free, %a1 : 250 = free) ins(%x_b = %x : tensor<100x67xf32>, %x1_b = %x1 : tensor<250x67xf32>, %x2_b = %x2 : tensor<250xf32>) outs(%linear_b : tensor<100x250xf32>) {
    %acc = loop.for %a2 = 0 to 67 reduce(add) -> f32 {
      %in = loop.load %x_b[%a0, %a2] : memref<100x67xf32>
      %in_1 = loop.load %x1_b[%a1, %a2] : memref<250x67xf32>
      %in_2 = arith.mulf %in, %in_1 : f32
      loop.yield %in_2 : f32
    }
    %in_3 = loop.load %x2_b[%a1] : memref<250xf32>
    %0 = arith.addf %acc, %in_3 : f32
    loop.store %0, %linear_b[%a0, %a1] : memref<100x250xf32>
  }
  func.return %linear : tensor<100x250xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       tile.kernel @k_linear axes(%a0_g : 32 = free, %a1_g : 64 = free)
// CHECK-SAME:  schedule = #tile.schedule<thread = [4, 4], threads = [8, 16], k_chunk = 16>
// CHECK:       loop.for %a2 = 0 to 80 reduce(add,
// CHECK-NEXT:    %in_r0 = loop.load %x_b[%a0_r0, %a2] guarded : memref<100x67xf32>
// CHECK-NEXT:    %in_c0 = loop.load %x1_b[%a1_c0, %a2] guarded : memref<250x67xf32>
// CHECK:       %in_c0_1 = loop.load %x2_b[%a1_c0] guarded : memref<250xf32>
// CHECK:       loop.store %{{.*}}, %linear_b[%a0_r0, %a1_c0] guarded : memref<100x250xf32>

// STAGE:       tile.kernel @k_linear axes(%a0_g_b : 4 = block, %a0_g_t : 8 = thread, %a1_g_b : 4 = block, %a1_g_t : 16 = thread)
// STAGE:       loop.for %a2_o = 0 to 5
// STAGE-NEXT:    tile.stage %x1_b[%a1_g_b * 64, %a2_o * 16] box [64, 16] transpose guarded : memref<250x67xf32> -> memref<16x64xf32>
// STAGE-NEXT:    tile.stage %x_b[%a0_g_b * 32, %a2_o * 16] box [32, 16] transpose guarded : memref<100x67xf32> -> memref<16x32xf32>
// STAGE:       loop.load %x1_smem[
// STAGE-NOT:   guarded
// STAGE:       loop.yield

// GIVEN:       tile.kernel @k_linear axes(%a0_g : 25 = free, %a1 : 250 = free)
// GIVEN-SAME:  schedule = #tile.schedule<thread = [4, 1]>
// GIVEN:       loop.for %a2 = 0 to 67 reduce
// GIVEN-NOT:   guarded
// GIVEN:       func.return
