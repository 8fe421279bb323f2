// RUN: deplo-opt %s -p pipeline-k-outer | filecheck %s

// A K-outer loop whose slab is double-buffered but filled by loads (no "async":
// async-copy declined the transposed slab) is pipelined too: materialize gives it
// register prefetch. A loop whose slabs are copied both ways (one async, one not:
// torch.matmul's) is pipelined as well (materialize's mixed rotation); one whose slabs
// are filled by TMA and by threads is left alone.

func.func @sync(%x: tensor<64x32xf32>, %w: tensor<16x32xf32>) -> tensor<64x16xf32> {
  %y = tile.kernel @k_sync axes(%m : 64 = block, %n : 16 = thread) ins(%xb = %x : tensor<64x32xf32>, %wb = %w : tensor<16x32xf32>) outs(%yb : tensor<64x16xf32>) {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
      %ws = tile.stage %wb[0, %ko * 8] box [16, 8] transpose pad 4 buffers 2 : memref<16x32xf32> -> memref<8x20xf32>
      %part = loop.for %ki = 0 to 8 reduce(add) -> f32 {
        %k = affine.apply affine_map<(d0, d1) -> (d0 * 8 + d1)> (%ko, %ki)
        %a = loop.load %xb[%m, %k] : memref<64x32xf32>
        %b = loop.load %ws[%ki, %n] : memref<8x20xf32>
        %p = arith.mulf %a, %b : f32
        loop.yield %p : f32
      }
      loop.yield %part : f32
    }
    loop.store %acc, %yb[%m, %n] : memref<64x16xf32>
  }
  func.return %y : tensor<64x16xf32>
}

func.func @mixed(%x: tensor<64x32xf32>, %w: tensor<16x32xf32>) -> tensor<64x16xf32> {
  %y = tile.kernel @k_mixed axes(%m_b : 2 = block, %m : 32 = thread, %n : 16 = thread) ins(%xb = %x : tensor<64x32xf32>, %wb = %w : tensor<16x32xf32>) outs(%yb : tensor<64x16xf32>) {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
      %ws = tile.stage %wb[0, %ko * 8] box [16, 8] transpose pad 4 buffers 2 async : memref<16x32xf32> -> memref<8x20xf32>
      %xs = tile.stage %xb[%m_b * 32, %ko * 8] box [32, 8] transpose buffers 2 : memref<64x32xf32> -> memref<8x32xf32>
      %part = loop.for %ki = 0 to 8 reduce(add) -> f32 {
        %a = loop.load %xs[%ki, %m] : memref<8x32xf32>
        %b = loop.load %ws[%ki, %n] : memref<8x20xf32>
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

func.func @tma_and_threads(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %y = tile.kernel @k_tma_and_threads axes(%m_b : 2 = block, %m : 32 = thread, %n : 16 = thread) ins(%xb = %x : tensor<64x32xf32>, %wb = %w : tensor<32x16xf32>) outs(%yb : tensor<64x16xf32>) {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
      %ws = tile.stage %wb[%ko * 8, 0] buffers 2 tma : memref<32x16xf32> -> memref<8x16xf32>
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

// CHECK-LABEL: func.func @sync
// CHECK:       %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 attributes {pipeline} {
// CHECK-NEXT:    %ws = tile.stage %wb[0, %ko * 8] box [16, 8] transpose pad 4 buffers 2 : memref<16x32xf32> -> memref<8x20xf32>
// CHECK-LABEL: func.func @mixed
// CHECK:       %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 attributes {pipeline} {
// CHECK-NEXT:    %ws = tile.stage {{.*}} buffers 2 async
// CHECK-NEXT:    %xs = tile.stage {{.*}} buffers 2 :
// CHECK-LABEL: func.func @tma_and_threads
// CHECK:       %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
// CHECK-NEXT:    tile.stage {{.*}} buffers 2 tma
// CHECK-NOT:   pipeline
