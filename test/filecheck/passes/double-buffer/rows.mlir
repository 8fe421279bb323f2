// RUN: deplo-opt %s -p double-buffer | filecheck %s
// RUN: deplo-opt %s -p double-buffer,double-buffer | filecheck %s
// RUN: deplo-opt %s -p 'double-buffer{max_bytes=1024}' | filecheck %s --check-prefix=SINGLE

// A K-outer loop of 4 chunks refills a slab of x stored in the source's order (not
// transposed: a 16-byte cp.async could fill it), 32 x 8 floats = 1 KB: it is doubled by
// default. The @once kernel's loop has a single iteration: nothing to overlap, left
// single. The second RUN line: idempotent. The third: doubled, the slab of @chunks (2 KB)
// does not fit max_bytes = 1 KB.

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
// CHECK:       %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
// CHECK-NEXT:    %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] buffers 2 : memref<64x32xf32> -> memref<32x8xf32>
// CHECK-LABEL: func.func @once
// CHECK:       %acc = loop.for %ko = 0 to 1 reduce(add) -> f32 {
// CHECK-NEXT:    %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] : memref<64x8xf32> -> memref<32x8xf32>

// SINGLE-LABEL: func.func @chunks
// SINGLE:       %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
// SINGLE-NEXT:    %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] : memref<64x32xf32> -> memref<32x8xf32>
// SINGLE-NOT:   buffers
