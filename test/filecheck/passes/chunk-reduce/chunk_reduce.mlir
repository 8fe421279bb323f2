// RUN: deplo-opt %s --split-input-file -p 'chunk-reduce{chunks=4}' | filecheck %s
// RUN: deplo-opt %s --split-input-file -p chunk-reduce | filecheck %s --check-prefix=COST

// Two rows of 8192 cannot fill the GPU: RMSNorm's sum of squares is split into four
// chunks per row, computed by a kernel of its own (axes row x chunk) that writes the
// partials; the norm kernel sums the four partials and, since the rest of its body is the
// normalising loop over the same 8192, takes a chunk axis too.
func.func @forward(%p_weight: tensor<8192xf32> {torch.kind = "param", torch.target = "weight"}, %x: tensor<1x2x8192xf32> {torch.kind = "input"}) -> tensor<1x2x8192xf32> {
  %rms_norm = tile.kernel @k_rms_norm axes(%a0 : 2 = free) ins(%x_b = %x : tensor<1x2x8192xf32>, %p_weight_b = %p_weight : tensor<8192xf32>) outs(%rms_norm_b : tensor<1x2x8192xf32>) attributes {covers = ["rms_norm"]} {
    %0 = arith.constant 8.192000e+03 : f32
    %1 = arith.constant 1.1920929e-07 : f32
    %sumsq = loop.for %a1 = 0 to 8192 reduce(add) -> f32 {
      %in = loop.load %x_b[0, %a0, %a1] : memref<1x2x8192xf32>
      %in_1 = arith.mulf %in, %in : f32
      loop.yield %in_1 : f32
    }
    %2 = arith.divf %sumsq, %0 : f32
    %3 = arith.addf %2, %1 : f32
    %in_2 = math.rsqrt %3 : f32
    loop.for %a2 = 0 to 8192 {
      %in_3 = loop.load %x_b[0, %a0, %a2] : memref<1x2x8192xf32>
      %in_4 = loop.load %p_weight_b[%a2] : memref<8192xf32>
      %4 = arith.mulf %in_3, %in_2 : f32
      %5 = arith.mulf %4, %in_4 : f32
      loop.store %5, %rms_norm_b[0, %a0, %a2] : memref<1x2x8192xf32>
    }
  }
  func.return %rms_norm : tensor<1x2x8192xf32>
}

// CHECK-LABEL: func.func @forward(%p_weight
// CHECK:       %rms_norm_parts = tile.kernel @k_rms_norm_chunks axes(%a0 : 2 = free, %c : 4 = free) ins(%x_b = %x : tensor<1x2x8192xf32>) outs(%part_b : tensor<2x4xf32>)
// CHECK-NEXT:    %sumsq = loop.for %a1_in = 0 to 2048 reduce(add) -> f32 {
// CHECK-NEXT:      %a1 = affine.apply affine_map<(d0, d1) -> (((d0 * 2048) + d1))> (%c, %a1_in)
// CHECK:         loop.store %sumsq, %part_b[%a0, %c] : memref<2x4xf32>
// CHECK:       %rms_norm = tile.kernel @k_rms_norm axes(%a0 : 2 = free, %c : 4 = free) ins({{.*}}, %part_b = %rms_norm_parts : tensor<2x4xf32>)
// CHECK:         %sumsq = loop.for %c_part = 0 to 4 reduce(add) -> f32 {
// CHECK-NEXT:      %sumsq_part = loop.load %part_b[%a0, %c_part] : memref<2x4xf32>
// CHECK:         loop.for %a2_in = 0 to 2048 {
// CHECK-NEXT:      %a2 = affine.apply affine_map<(d0, d1) -> (((d0 * 2048) + d1))> (%c, %a2_in)

// The cost function leaves rows of 8192 whole: a block's work.
// COST-LABEL: func.func @forward(%p_weight
// COST-NOT:   _chunks
// COST:       loop.for %a1 = 0 to 8192 reduce(add)

// -----

// Softmax's exp-sum reads the max computed before it in the same kernel, so the kernel
// stays whole.
func.func @forward(%x: tensor<1x2x65536xf32> {torch.kind = "input"}) -> tensor<1x2x65536xf32> {
  %softmax = tile.kernel @k_softmax axes(%a0 : 2 = free) ins(%x_b = %x : tensor<1x2x65536xf32>) outs(%softmax_b : tensor<1x2x65536xf32>) attributes {covers = ["softmax"]} {
    %max = loop.for %a1 = 0 to 65536 reduce(max) -> f32 {
      %in = loop.load %x_b[0, %a0, %a1] : memref<1x2x65536xf32>
      loop.yield %in : f32
    }
    %sum = loop.for %a2 = 0 to 65536 reduce(add) -> f32 {
      %in_1 = loop.load %x_b[0, %a0, %a2] : memref<1x2x65536xf32>
      %0 = arith.subf %in_1, %max : f32
      %in_2 = math.exp %0 : f32
      loop.yield %in_2 : f32
    }
    loop.for %a3 = 0 to 65536 {
      %in_3 = loop.load %x_b[0, %a0, %a3] : memref<1x2x65536xf32>
      %1 = arith.subf %in_3, %max : f32
      %in_4 = math.exp %1 : f32
      %2 = arith.divf %in_4, %sum : f32
      loop.store %2, %softmax_b[0, %a0, %a3] : memref<1x2x65536xf32>
    }
  }
  func.return %softmax : tensor<1x2x65536xf32>
}

// CHECK-LABEL: func.func @forward(%x
// CHECK-NOT:   _chunks
// CHECK:       tile.kernel @k_softmax axes(%a0 : 2 = free)
