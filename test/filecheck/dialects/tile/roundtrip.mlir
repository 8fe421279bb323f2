// RUN: deplo-opt %s | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// The tile dialect's custom syntax: axes with their bindings, strided loops (free and
// reduce, one or more accumulators), combines; loop.* ops reused inside.

func.func @forward(%x: tensor<1x32x2048xf32>, %p_weight: tensor<2048xf32>) -> tensor<1x32x2048xf32> {
  %y = tile.kernel @k_rms_norm axes(%t : 256 = thread, %a0 : 32 = block) ins(%xb = %x : tensor<1x32x2048xf32>, %wb = %p_weight : tensor<2048xf32>) outs(%yb : tensor<1x32x2048xf32>) {
    %ss_part = tile.strided_for %a1 = %t to 2048 step 256 reduce(add) -> f32 {
      %v = loop.load %xb[0, %a0, %a1] : memref<1x32x2048xf32>
      %q = arith.mulf %v, %v : f32
      loop.yield %q : f32
    }
    %ss = tile.combine add %ss_part across %t : f32
    %r = math.rsqrt %ss : f32
    tile.strided_for %a2 = %t to 2048 step 256 {
      %v2 = loop.load %xb[0, %a0, %a2] : memref<1x32x2048xf32>
      %w = loop.load %wb[%a2] : memref<2048xf32>
      %h = arith.mulf %v2, %r : f32
      %o = arith.mulf %h, %w : f32
      loop.store %o, %yb[0, %a0, %a2] : memref<1x32x2048xf32>
    }
  }
  func.return %y : tensor<1x32x2048xf32>
}

// CHECK:      %y = tile.kernel @k_rms_norm axes(%t : 256 = thread, %a0 : 32 = block) ins(%xb = %x : tensor<1x32x2048xf32>, %wb = %p_weight : tensor<2048xf32>) outs(%yb : tensor<1x32x2048xf32>) {
// CHECK-NEXT:   %ss_part = tile.strided_for %a1 = %t to 2048 step 256 reduce(add) -> f32 {
// CHECK-NEXT:     %v = loop.load %xb[0, %a0, %a1] : memref<1x32x2048xf32>
// CHECK-NEXT:     %q = arith.mulf %v, %v : f32
// CHECK-NEXT:     loop.yield %q : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %ss = tile.combine add %ss_part across %t : f32
// CHECK-NEXT:   %r = math.rsqrt %ss : f32
// CHECK-NEXT:   tile.strided_for %a2 = %t to 2048 step 256 {
// CHECK-NEXT:     %v2 = loop.load %xb[0, %a0, %a2] : memref<1x32x2048xf32>
// CHECK-NEXT:     %w = loop.load %wb[%a2] : memref<2048xf32>
// CHECK-NEXT:     %h = arith.mulf %v2, %r : f32
// CHECK-NEXT:     %o = arith.mulf %h, %w : f32
// CHECK-NEXT:     loop.store %o, %yb[0, %a0, %a2] : memref<1x32x2048xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// Free axes (tileify's output), several accumulators, a kernel attribute, a kernel
// with no axes at all.
func.func @moments(%x: tensor<4x64xf32>) -> (tensor<4xf32>, tensor<f32>) {
  %m = tile.kernel @k_moments axes(%t : 64 = thread, %a0 : 4 = free) ins(%xb = %x : tensor<4x64xf32>) outs(%mb : tensor<4xf32>) attributes {covers = ["mean"]} {
    %s_part, %mx_part = tile.strided_for %a1 = %t to 64 step 64 reduce(add, max) -> (f32, f32) {
      %v = loop.load %xb[%a0, %a1] : memref<4x64xf32>
      loop.yield %v, %v : f32, f32
    }
    %s = tile.combine add %s_part across %t : f32
    %mx = tile.combine max %mx_part across %t : f32
    %d = arith.divf %s, %mx : f32
    loop.store %d, %mb[%a0] : memref<4xf32>
  }
  %z = tile.kernel @k_scalar axes() ins(%xb = %x : tensor<4x64xf32>) outs(%zb : tensor<f32>) {
    %v = loop.load %xb[3, 63] : memref<4x64xf32>
    loop.store %v, %zb[] : memref<f32>
  }
  func.return %m, %z : tensor<4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @moments
// CHECK:       %m = tile.kernel @k_moments axes(%t : 64 = thread, %a0 : 4 = free) ins(%xb = %x : tensor<4x64xf32>) outs(%mb : tensor<4xf32>) attributes {covers = ["mean"]} {
// CHECK-NEXT:    %s_part, %mx_part = tile.strided_for %a1 = %t to 64 step 64 reduce(add, max) -> (f32, f32) {
// CHECK-NEXT:      %v = loop.load %xb[%a0, %a1] : memref<4x64xf32>
// CHECK-NEXT:      loop.yield %v, %v : f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %s = tile.combine add %s_part across %t : f32
// CHECK-NEXT:    %mx = tile.combine max %mx_part across %t : f32
// CHECK:       %z = tile.kernel @k_scalar axes() ins(%xb = %x : tensor<4x64xf32>) outs(%zb : tensor<f32>) {
// CHECK-NEXT:    %v = loop.load %xb[3, 63] : memref<4x64xf32>
// CHECK-NEXT:    loop.store %v, %zb[] : memref<f32>

// -----

func.func @staged(%x: tensor<1x32x2048xf32>) -> tensor<1x32x2048xf32> {
  %y = tile.kernel @k axes(%t : 256 = thread, %a0 : 32 = block) ins(%xb = %x : tensor<1x32x2048xf32>) outs(%yb : tensor<1x32x2048xf32>) {
    %x_smem = tile.stage %xb[0, %a0, 0] : memref<1x32x2048xf32> -> memref<2048xf32>
    tile.strided_for %a1 = %t to 2048 step 256 {
      %v = loop.load %x_smem[%a1] : memref<2048xf32>
      loop.store %v, %yb[0, %a0, %a1] : memref<1x32x2048xf32>
    }
  }
  func.return %y : tensor<1x32x2048xf32>
}

// CHECK:      %x_smem = tile.stage %xb[0, %a0, 0] : memref<1x32x2048xf32> -> memref<2048xf32>
// CHECK-NEXT: tile.strided_for %a1 = %t to 2048 step 256 {
// CHECK-NEXT:   %v = loop.load %x_smem[%a1] : memref<2048xf32>

// -----

// A K chunk of each operand, staged on every iteration of the K-outer loop; the weight's
// slab is stored transposed ([k][n]) with each row padded by 4.
func.func @staged_per_chunk(%x: tensor<64x32xf32>, %w: tensor<16x32xf32>) -> tensor<64x16xf32> {
  %y = tile.kernel @k axes(%m : 64 = block, %n : 16 = thread) ins(%xb = %x : tensor<64x32xf32>, %wb = %w : tensor<16x32xf32>) outs(%yb : tensor<64x16xf32>) {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
      %ws = tile.stage %wb[0, %ko * 8] box [16, 8] transpose pad 4 : memref<16x32xf32> -> memref<8x20xf32>
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

// CHECK:      %ws = tile.stage %wb[0, %ko * 8] box [16, 8] transpose pad 4 : memref<16x32xf32> -> memref<8x20xf32>
// CHECK:        %b = loop.load %ws[%ki, %n] : memref<8x20xf32>

// -----

// A K-chunk slab refilled by every iteration of the K-outer loop, double-buffered and
// filled by cp.async, the loop marked to run as a copy/compute pipeline.
func.func @staged_async(%x: tensor<64x32xf32>, %w: tensor<16x32xf32>) -> tensor<64x16xf32> {
  %y = tile.kernel @k axes(%m : 64 = block, %n : 16 = thread) ins(%xb = %x : tensor<64x32xf32>, %wb = %w : tensor<16x32xf32>) outs(%yb : tensor<64x16xf32>) {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 attributes {pipeline} {
      %ws = tile.stage %wb[0, %ko * 8] box [16, 8] transpose pad 4 buffers 2 async : memref<16x32xf32> -> memref<8x20xf32>
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

// CHECK:      %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 attributes {pipeline} {
// CHECK-NEXT:   %ws = tile.stage %wb[0, %ko * 8] box [16, 8] transpose pad 4 buffers 2 async : memref<16x32xf32> -> memref<8x20xf32>
// CHECK:          %b = loop.load %ws[%ki, %n] : memref<8x20xf32>

// -----

// An online group (softmax's max and exp-sum in one pass: dialects/combine.py) is one
// combine of both partials.
func.func @online(%x: tensor<4x64xf32>) -> tensor<4xf32> {
  %y = tile.kernel @k_lse axes(%t : 64 = thread, %a0 : 4 = block) ins(%xb = %x : tensor<4x64xf32>) outs(%yb : tensor<4xf32>) {
    %m_part, %s_part = tile.strided_for %a1 = %t to 64 step 64 reduce(online_max, online_sum) -> (f32, f32) {
      %v = loop.load %xb[%a0, %a1] : memref<4x64xf32>
      %one = arith.constant 1.0 : f32
      loop.yield %v, %one : f32, f32
    }
    %m, %s = tile.combine online_max, online_sum %m_part, %s_part across %t : f32, f32
    %l = math.log %s : f32
    %r = arith.addf %m, %l : f32
    loop.store %r, %yb[%a0] : memref<4xf32>
  }
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @online
// CHECK:       %m_part, %s_part = tile.strided_for %a1 = %t to 64 step 64 reduce(online_max, online_sum) -> (f32, f32) {
// CHECK:       %m, %s = tile.combine online_max, online_sum %m_part, %s_part across %t : f32, f32
// CHECK-NEXT:  %l = math.log %s : f32
