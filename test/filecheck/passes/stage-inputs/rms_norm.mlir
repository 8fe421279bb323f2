// RUN: deplo-opt %s -p 'stage-inputs{min_source_bytes=0}' | filecheck %s
// RUN: deplo-opt %s -p 'stage-inputs{min_source_bytes=0},stage-inputs{min_source_bytes=0}' | filecheck %s
// RUN: deplo-opt %s -p 'stage-inputs{min_source_bytes=0 max_bytes=4096 large=false}' | filecheck %s --check-prefix=BUDGET
// RUN: deplo-opt %s -p 'stage-inputs{min_source_bytes=0 max_bytes=4096}' | filecheck %s --check-prefix=LARGE
// RUN: deplo-opt %s -p 'stage-inputs{min_source_bytes=0 min_reads=1}' | filecheck %s --check-prefix=ALL

// RMSNorm reads its row twice: the row (8 KB) is staged once per block and both loops
// read the slab; the weight is read once, so it stays in global memory. The second RUN
// line: idempotent. The third: a slab over max_bytes is declined (the large-slab rule off).
// The fourth: the kernel's one slab over max_bytes is a large slab, filled by cp.async
// (async). The fifth: min_reads=1 stages the weight too (the whole vector: its index
// depends on the thread).

func.func @forward(%x: tensor<1x32x2048xf32>, %p_weight: tensor<2048xf32>) -> tensor<1x32x2048xf32> {
  %y = tile.kernel @k_rms_norm axes(%t : 256 = thread, %a0 : 32 = block) ins(%x_b = %x : tensor<1x32x2048xf32>, %w_b = %p_weight : tensor<2048xf32>) outs(%y_b : tensor<1x32x2048xf32>) {
    %p = tile.strided_for %a1 = %t to 2048 step 256 reduce(add) -> f32 {
      %v = loop.load %x_b[0, %a0, %a1] : memref<1x32x2048xf32>
      %q = arith.mulf %v, %v : f32
      loop.yield %q : f32
    }
    %ss = tile.combine add %p across %t : f32
    %r = math.rsqrt %ss : f32
    tile.strided_for %a2 = %t to 2048 step 256 {
      %v2 = loop.load %x_b[0, %a0, %a2] : memref<1x32x2048xf32>
      %w = loop.load %w_b[%a2] : memref<2048xf32>
      %o = arith.mulf %v2, %r : f32
      %o2 = arith.mulf %o, %w : f32
      loop.store %o2, %y_b[0, %a0, %a2] : memref<1x32x2048xf32>
    }
  }
  func.return %y : tensor<1x32x2048xf32>
}

// CHECK:      tile.kernel @k_rms_norm
// CHECK-NEXT:   %x_smem = tile.stage %x_b[0, %a0, 0] : memref<1x32x2048xf32> -> memref<2048xf32>
// CHECK-NOT:    tile.stage
// CHECK:        loop.load %x_smem[%a1] : memref<2048xf32>
// CHECK:        loop.load %x_smem[%a2] : memref<2048xf32>
// CHECK-NEXT:   loop.load %w_b[%a2] : memref<2048xf32>

// BUDGET:     tile.kernel @k_rms_norm
// BUDGET-NOT: tile.stage
// BUDGET:     loop.load %x_b[0, %a0, %a1] : memref<1x32x2048xf32>
// BUDGET:     loop.load %x_b[0, %a0, %a2] : memref<1x32x2048xf32>
// BUDGET-NEXT: loop.load %w_b[%a2] : memref<2048xf32>

// ALL:      %w_smem = tile.stage %w_b[0] : memref<2048xf32> -> memref<2048xf32>
// ALL-NEXT: %x_smem = tile.stage %x_b[0, %a0, 0]
// ALL:      loop.load %w_smem[%a2]

// LARGE:      tile.kernel @k_rms_norm
// LARGE-NEXT:   %x_smem = tile.stage %x_b[0, %a0, 0] async : memref<1x32x2048xf32> -> memref<2048xf32>
// LARGE-NOT:    tile.stage
// LARGE:        loop.load %x_smem[%a1] : memref<2048xf32>
// LARGE:        loop.load %x_smem[%a2] : memref<2048xf32>
// LARGE-NEXT:   loop.load %w_b[%a2] : memref<2048xf32>
