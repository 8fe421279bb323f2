// RUN: deplo-opt %s -p fill-k-loop | filecheck %s
// RUN: deplo-opt %s -p fill-k-loop,fill-k-loop | filecheck %s
// RUN: deplo-opt %s -p fill-k-loop --arch sm_75 | filecheck %s --check-prefix=SM75
// RUN: deplo-opt %s -p 'fill-k-loop{tma=true}' | filecheck %s --check-prefix=TMA
// RUN: deplo-opt %s -p 'fill-k-loop{tma=true arch=sm_80}' | filecheck %s
// RUN: deplo-opt %s -p 'fill-k-loop{max_bytes=1024}' | filecheck %s --check-prefix=SINGLE

// A K-outer loop of 4 chunks refills a slab of x stored in the source's order (not
// transposed), 32 x 8 floats = 1 KB: by default it is doubled, filled by 16-byte cp.async
// and the loop rotates; on sm_75 (no cp.async) by register prefetch; with tma=true on
// sm_90 by TMA (its box is within TMA's rules and 1 KB a copy), but not on sm_80. These
// kernels have no matmul schedule, so no fill is recorded on the kernel. The @once
// kernel's loop has a single iteration: nothing to overlap, left single. The second RUN
// line: idempotent. The last: the doubled slab of @chunks (2 KB) does not fit
// max_bytes = 1 KB.

func.func @chunks(%x: tensor<64x32xf32>, %w: tensor<16x32xf32>) -> tensor<64x16xf32> {
  %y = tile.kernel @k_chunks axes(%m_b : 2 = block, %m : 32 = thread, %n : 16 = thread) ins(%xb = %x : tensor<64x32xf32>, %wb = %w : tensor<16x32xf32>) outs(%yb : tensor<64x16xf32>) {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
      %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] : memref<64x32xf32> -> memref<32x8xf32>
      %part = loop.for %ki = 0 to 8 reduce(add) -> f32 {
        %k = affine.apply affine_map<(d0, d1) -> (d0 * 8 + d1)> (%ko, %ki)
        %a = loop.load %xs[%m, %ki] : memref<32x8xf32>
        %b = loop.load %wb[%n, %k] : memref<16x32xf32>
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

func.func @once(%x: tensor<64x8xf32>, %w: tensor<16x8xf32>) -> tensor<64x16xf32> {
  %y = tile.kernel @k_once axes(%m_b : 2 = block, %m : 32 = thread, %n : 16 = thread) ins(%xb = %x : tensor<64x8xf32>, %wb = %w : tensor<16x8xf32>) outs(%yb : tensor<64x16xf32>) {
    %acc = loop.for %ko = 0 to 1 reduce(add) -> f32 {
      %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] : memref<64x8xf32> -> memref<32x8xf32>
      %part = loop.for %ki = 0 to 8 reduce(add) -> f32 {
        %a = loop.load %xs[%m, %ki] : memref<32x8xf32>
        %b = loop.load %wb[%n, %ki] : memref<16x8xf32>
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

// CHECK-LABEL: func.func @chunks
// CHECK:       tile.kernel @k_chunks {{.*}}) {
// CHECK-NEXT:    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 attributes {pipeline} {
// CHECK-NEXT:    %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] buffers 2 async : memref<64x32xf32> -> memref<32x8xf32>
// CHECK-LABEL: func.func @once
// CHECK:       %acc = loop.for %ko = 0 to 1 reduce(add) -> f32 {
// CHECK-NEXT:    %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] : memref<64x8xf32> -> memref<32x8xf32>

// SM75-LABEL:  func.func @chunks
// SM75:        %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 attributes {pipeline} {
// SM75-NEXT:     %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] buffers 2 : memref<64x32xf32> -> memref<32x8xf32>

// TMA-LABEL:   func.func @chunks
// TMA:         %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 attributes {pipeline} {
// TMA-NEXT:      %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] buffers 2 tma : memref<64x32xf32> -> memref<32x8xf32>

// SINGLE-LABEL: func.func @chunks
// SINGLE:       %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
// SINGLE-NEXT:    %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] : memref<64x32xf32> -> memref<32x8xf32>
// SINGLE-LABEL: func.func @once
// SINGLE:         %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] : memref<64x8xf32> -> memref<32x8xf32>
