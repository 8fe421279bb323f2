// RUN: deplo-opt %s -p 'chunk-matmul-k{bk=8}' | filecheck %s
// RUN: deplo-opt %s -p 'chunk-matmul-k{bk=8},chunk-matmul-k{bk=8}' | filecheck %s
// RUN: deplo-opt %s -p 'chunk-matmul-k{bk=8},chunk-matmul-k{bk=2}' | filecheck %s
// RUN: deplo-opt %s -p 'chunk-matmul-k{bk=64}' | filecheck %s --check-prefix=BK64
// RUN: deplo-opt %s -p chunk-matmul-k | filecheck %s --check-prefix=LEFT
// RUN: deplo-opt %s -p 'chunk-matmul-k{bk=48}' | filecheck %s --check-prefix=LEFT
// RUN: deplo-opt %s -p 'chunk-matmul-k{bk=128}' | filecheck %s --check-prefix=LEFT

// linear (1,64,128) x (128,128)^T after tileify,register-tile{tm=4 tn=4}: 16 accumulators
// in one K loop of 128. bk=8 splits it into 16 chunks of 8: the outer loop carries the
// 16 accumulators, the inner loop's partial sums (_part) are yielded to it, and the K
// index is rebuilt from both. The second and third RUN lines: idempotent (a chunked
// loop's body is a loop), whatever bk the second run asks for. Without bk and with no
// cost-model tile (block_tile) the kernel is left alone; so it is with a bk that does not
// divide K (48) or that gives a single chunk (128).

func.func @forward(%x: tensor<1x64x128xf32>, %x1: tensor<128x128xf32>) -> tensor<1x64x128xf32> {
  %linear = tile.kernel @k_linear axes(%a0_g : 16 = free, %a1_g : 32 = free) ins(%x_b = %x : tensor<1x64x128xf32>, %x1_b = %x1 : tensor<128x128xf32>) outs(%linear_b : tensor<1x64x128xf32>) attributes {covers = ["linear"], schedule = #tile.schedule<thread = [4, 4]>} {
    %a0_r0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a0_g)
    %a0_r1 = affine.apply affine_map<(d0) -> (((d0 * 4) + 1))> (%a0_g)
    %a0_r2 = affine.apply affine_map<(d0) -> (((d0 * 4) + 2))> (%a0_g)
    %a0_r3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a0_g)
    %a1_c0 = affine.apply affine_map<(d0) -> ((d0 * 4))> (%a1_g)
    %a1_c1 = affine.apply affine_map<(d0) -> (((d0 * 4) + 1))> (%a1_g)
    %a1_c2 = affine.apply affine_map<(d0) -> (((d0 * 4) + 2))> (%a1_g)
    %a1_c3 = affine.apply affine_map<(d0) -> (((d0 * 4) + 3))> (%a1_g)
    %linear_r0c0, %linear_r0c1, %linear_r0c2, %linear_r0c3, %linear_r1c0, %linear_r1c1, %linear_r1c2, %linear_r1c3, %linear_r2c0, %linear_r2c1, %linear_r2c2, %linear_r2c3, %linear_r3c0, %linear_r3c1, %linear_r3c2, %linear_r3c3 = loop.for %a2 = 0 to 128 reduce(add, add, add, add, add, add, add, add, add, add, add, add, add, add, add, add) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
      %in_r0 = loop.load %x_b[0, %a0_r0, %a2] : memref<1x64x128xf32>
      %in_c0 = loop.load %x1_b[%a1_c0, %a2] : memref<128x128xf32>
      %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
      %in_c1 = loop.load %x1_b[%a1_c1, %a2] : memref<128x128xf32>
      %in_r0c1 = arith.mulf %in_r0, %in_c1 : f32
      %in_c2 = loop.load %x1_b[%a1_c2, %a2] : memref<128x128xf32>
      %in_r0c2 = arith.mulf %in_r0, %in_c2 : f32
      %in_c3 = loop.load %x1_b[%a1_c3, %a2] : memref<128x128xf32>
      %in_r0c3 = arith.mulf %in_r0, %in_c3 : f32
      %in_r1 = loop.load %x_b[0, %a0_r1, %a2] : memref<1x64x128xf32>
      %in_r1c0 = arith.mulf %in_r1, %in_c0 : f32
      %in_r1c1 = arith.mulf %in_r1, %in_c1 : f32
      %in_r1c2 = arith.mulf %in_r1, %in_c2 : f32
      %in_r1c3 = arith.mulf %in_r1, %in_c3 : f32
      %in_r2 = loop.load %x_b[0, %a0_r2, %a2] : memref<1x64x128xf32>
      %in_r2c0 = arith.mulf %in_r2, %in_c0 : f32
      %in_r2c1 = arith.mulf %in_r2, %in_c1 : f32
      %in_r2c2 = arith.mulf %in_r2, %in_c2 : f32
      %in_r2c3 = arith.mulf %in_r2, %in_c3 : f32
      %in_r3 = loop.load %x_b[0, %a0_r3, %a2] : memref<1x64x128xf32>
      %in_r3c0 = arith.mulf %in_r3, %in_c0 : f32
      %in_r3c1 = arith.mulf %in_r3, %in_c1 : f32
      %in_r3c2 = arith.mulf %in_r3, %in_c2 : f32
      %in_r3c3 = arith.mulf %in_r3, %in_c3 : f32
      loop.yield %in_r0c0, %in_r0c1, %in_r0c2, %in_r0c3, %in_r1c0, %in_r1c1, %in_r1c2, %in_r1c3, %in_r2c0, %in_r2c1, %in_r2c2, %in_r2c3, %in_r3c0, %in_r3c1, %in_r3c2, %in_r3c3 : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
    }
    loop.store %linear_r0c0, %linear_b[0, %a0_r0, %a1_c0] : memref<1x64x128xf32>
    loop.store %linear_r0c1, %linear_b[0, %a0_r0, %a1_c1] : memref<1x64x128xf32>
    loop.store %linear_r0c2, %linear_b[0, %a0_r0, %a1_c2] : memref<1x64x128xf32>
    loop.store %linear_r0c3, %linear_b[0, %a0_r0, %a1_c3] : memref<1x64x128xf32>
    loop.store %linear_r1c0, %linear_b[0, %a0_r1, %a1_c0] : memref<1x64x128xf32>
    loop.store %linear_r1c1, %linear_b[0, %a0_r1, %a1_c1] : memref<1x64x128xf32>
    loop.store %linear_r1c2, %linear_b[0, %a0_r1, %a1_c2] : memref<1x64x128xf32>
    loop.store %linear_r1c3, %linear_b[0, %a0_r1, %a1_c3] : memref<1x64x128xf32>
    loop.store %linear_r2c0, %linear_b[0, %a0_r2, %a1_c0] : memref<1x64x128xf32>
    loop.store %linear_r2c1, %linear_b[0, %a0_r2, %a1_c1] : memref<1x64x128xf32>
    loop.store %linear_r2c2, %linear_b[0, %a0_r2, %a1_c2] : memref<1x64x128xf32>
    loop.store %linear_r2c3, %linear_b[0, %a0_r2, %a1_c3] : memref<1x64x128xf32>
    loop.store %linear_r3c0, %linear_b[0, %a0_r3, %a1_c0] : memref<1x64x128xf32>
    loop.store %linear_r3c1, %linear_b[0, %a0_r3, %a1_c1] : memref<1x64x128xf32>
    loop.store %linear_r3c2, %linear_b[0, %a0_r3, %a1_c2] : memref<1x64x128xf32>
    loop.store %linear_r3c3, %linear_b[0, %a0_r3, %a1_c3] : memref<1x64x128xf32>
  }
  func.return %linear : tensor<1x64x128xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       tile.kernel @k_linear axes(%a0_g : 16 = free, %a1_g : 32 = free)
// CHECK:       %linear_r0c0, {{.*}}, %linear_r3c3 = loop.for %a2_o = 0 to 16 reduce(add, {{.*}}) -> (f32, {{.*}}) {
// CHECK-NEXT:    %linear_r0c0_part, {{.*}}, %linear_r3c3_part = loop.for %a2_i = 0 to 8 reduce(add, {{.*}}) -> (f32, {{.*}}) {
// CHECK-NEXT:      %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 8) + d1))> (%a2_o, %a2_i)
// CHECK-NEXT:      %in_r0 = loop.load %x_b[0, %a0_r0, %a2] : memref<1x64x128xf32>
// CHECK-NEXT:      %in_c0 = loop.load %x1_b[%a1_c0, %a2] : memref<128x128xf32>
// CHECK-NEXT:      %in_r0c0 = arith.mulf %in_r0, %in_c0 : f32
// CHECK:           loop.yield %in_r0c0, {{.*}}, %in_r3c3 : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.yield %linear_r0c0_part, {{.*}}, %linear_r3c3_part : f32
// CHECK-NEXT:  }
// CHECK-NOT:   loop.for
// CHECK:       loop.store %linear_r0c0, %linear_b[0, %a0_r0, %a1_c0]

// BK64:        loop.for %a2_o = 0 to 2 reduce
// BK64-NEXT:     loop.for %a2_i = 0 to 64 reduce
// BK64-NEXT:       %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 64) + d1))> (%a2_o, %a2_i)

// LEFT:        loop.for %a2 = 0 to 128 reduce
// LEFT-NEXT:     %in_r0 = loop.load %x_b[0, %a0_r0, %a2]
// LEFT-NOT:    loop.for
