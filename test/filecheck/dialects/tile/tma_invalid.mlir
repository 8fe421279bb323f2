// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The rules of a tma slab (tma-copy) and of split (split-inner-for-swizzle), each named.

func.func @tma_padded(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] box [16, 64] pad 4 buffers 2 tma : memref<128x64xf32> -> memref<16x68xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: a tma slab is stored as the source lies (TMA writes a box densely): no transpose, no pad

// -----

func.func @tma_transposed(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] box [16, 64] transpose buffers 2 tma : memref<128x64xf32> -> memref<64x16xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: a tma slab is stored as the source lies (TMA writes a box densely): no transpose, no pad

// -----

func.func @tma_single(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] tma : memref<128x64xf32> -> memref<16x64xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: a tma stage needs buffers 2 (the copy of the next chunk lands while this one is read)

// -----

func.func @tma_and_async(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] buffers 2 async tma : memref<128x64xf32> -> memref<16x64xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: a slab is filled by tma or by async copies, not both

// -----

func.func @tma_narrow_row(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<16x2xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: a tma slab's box breaks TMA's rules: the box's inner row is 8 bytes, not a multiple of 16

// -----

func.func @tma_misaligned(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] buffers 2 tma : memref<128x64xf32> -> memref<3x4xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: a tma slab's box of 48 bytes is not a multiple of 128: the next one would land misaligned

// -----

func.func @split_without_tma(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] box [16, 64] buffers 2 split 32 : memref<128x64xf32> -> memref<2x16x32xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: split 32 needs a tma slab whose inner extent 64 it divides

// -----

func.func @split_stored_wrong(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] box [16, 64] buffers 2 tma split 32 : memref<128x64xf32> -> memref<16x64xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: box [16, 64] with pad 0, split 32 is stored as [2, 16, 32], not [16, 64]

// -----

func.func @swizzle_wide_rows(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] buffers 2 tma swizzle 128 : memref<128x64xf32> -> memref<16x64xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: a 128-byte swizzle needs a slab of rank 2 whose stored rows are 128 bytes (not 256) and whose row count is a multiple of 8 (the pattern's repeat)

// -----

func.func @swizzle_without_tma(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] box [16, 32] buffers 2 swizzle 128 : memref<128x64xf32> -> memref<16x32xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: swizzle 128 needs a tma slab and one of 128 bytes
