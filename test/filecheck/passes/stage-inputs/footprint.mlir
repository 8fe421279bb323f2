// RUN: deplo-opt %s -p 'stage-inputs{min_source_bytes=0}' | filecheck %s

// RoPE on q: each block takes 16 of a head's 128 rows and reads q three times (the
// element, and both halves for rotate-half). The loads share only the head index, so the
// slab would be the whole 128x64 head, 8x what the block reads: not staged.

func.func @forward(%q: tensor<1x32x128x64xf32>) -> tensor<1x32x128x64xf32> {
  %y = tile.kernel @k_rope axes(%a0 : 32 = block, %a1_b : 8 = block, %a1_t : 16 = thread, %g : 16 = thread) ins(%q_b = %q : tensor<1x32x128x64xf32>) outs(%y_b : tensor<1x32x128x64xf32>) {
    %a1 = affine.apply affine_map<(d0, d1) -> (((d0 * 16) + d1))> (%a1_b, %a1_t)
    tile.strided_for %a2 = %g to 64 step 64 vector 4 {
      %v = loop.load %q_b[0, %a0, %a1, %a2] : memref<1x32x128x64xf32>
      %hi = loop.load %q_b[0, %a0, %a1, %a2 mod 32 + 32] : memref<1x32x128x64xf32>
      %lo = loop.load %q_b[0, %a0, %a1, %a2 mod 32] : memref<1x32x128x64xf32>
      %s = arith.addf %hi, %lo : f32
      %o = arith.addf %v, %s : f32
      loop.store %o, %y_b[0, %a0, %a1, %a2] : memref<1x32x128x64xf32>
    }
  }
  func.return %y : tensor<1x32x128x64xf32>
}

// CHECK-LABEL: tile.kernel @k_rope
// CHECK-NOT:   tile.stage
// CHECK:       loop.load %q_b[0, %a0, %a1, %a2]
