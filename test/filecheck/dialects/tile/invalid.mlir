// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per rule of the tile dialect's verifiers.

func.func @bad_binding(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tile.kernel @k axes(%a : 4 = warp) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
  }
  func.return %y : tensor<4xf32>
}

// CHECK: tile.kernel: axis binding 'warp' is not one of free, thread, block

// -----

func.func @zero_extent(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tile.kernel @k axes(%a : 0 = free) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
  }
  func.return %y : tensor<4xf32>
}

// CHECK: tile.kernel: axis extent 0 must be positive

// -----

func.func @too_many_threads(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tile.kernel @k axes(%a : 64 = thread, %b : 32 = thread) ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
  }
  func.return %y : tensor<4xf32>
}

// CHECK: tile.kernel: thread axes give 2048 threads per block, more than the target's 1024

// -----

func.func @extents_and_bindings(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "tile.kernel"(%x) <{sym_name = "k", extents = [#builtin.int<4>, #builtin.int<2>], bindings = ["free"]}> ({
  ^bb0(%a: index, %xb: memref<4xf32>, %yb: memref<4xf32>):
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: tile.kernel: one binding per axis extent

// -----

func.func @axis_not_index(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "tile.kernel"(%x) <{sym_name = "k", extents = [#builtin.int<4>], bindings = ["free"]}> ({
  ^bb0(%a: i32, %xb: memref<4xf32>, %yb: memref<4xf32>):
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: tile.kernel: axis arguments are of type index

// -----

func.func @buffer_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "tile.kernel"(%x) <{sym_name = "k", extents = [#builtin.int<4>], bindings = ["free"]}> ({
  ^bb0(%a: index, %xb: memref<8xf32>, %yb: memref<4xf32>):
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: tile.kernel: buffer argument 0 is memref<8xf32>, expected memref<4xf32> for tensor<4xf32>

// -----

func.func @zero_step(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    tile.strided_for %i = %t to 64 step 0 {
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.strided_for: step 0 must be positive

// -----

func.func @unknown_reduce_kind(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %p = tile.strided_for %i = %t to 64 step 32 reduce(xor) -> f32 {
      %v = loop.load %xb[%i] : memref<64xf32>
      loop.yield %v : f32
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.strided_for: unknown reduction kind 'xor' (known: add, mul, max, min, online_max, online_sum)

// -----

func.func @reduce_without_yield(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %p = tile.strided_for %i = %t to 64 step 32 reduce(add) -> f32 {
      %v = loop.load %xb[%i] : memref<64xf32>
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.strided_for: a reduce loop must yield one value per accumulator

// -----

func.func @kinds_and_results(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %p = "tile.strided_for"(%t) <{upper = #builtin.int<64>, step = #builtin.int<32>, reduce = ["add", "max"]}> ({
    ^bb0(%i: index):
      %v = loop.load %xb[%i] : memref<64xf32>
      loop.yield %v : f32
    }) : (index) -> f32
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.strided_for: 2 reduction kinds for 1 results

// -----

func.func @free_loop_yields(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    tile.strided_for %i = %t to 64 step 32 {
      %v = loop.load %xb[%i] : memref<64xf32>
      loop.yield %v : f32
    }
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.strided_for: a free loop yields nothing

// -----

func.func @two_induction_vars(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    "tile.strided_for"(%t) <{upper = #builtin.int<64>, step = #builtin.int<32>, reduce = []}> ({
    ^bb0(%i: index, %j: index):
    }) : (index) -> ()
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.strided_for: the body takes exactly one index (the induction var)

// -----

func.func @out_of_bounds(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %v = loop.load %xb[%t * 2 + 2] : memref<64xf32>
    loop.store %v, %yb[%t] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: loop.load: index 0 ranges over [2, 64], outside the buffer's extent 64

// -----

func.func @combine_unknown_kind(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %v = loop.load %xb[%t] : memref<64xf32>
    %s = tile.combine avg %v across %t : f32
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.combine: unknown reduction kind 'avg' (known: add, mul, max, min, online_max, online_sum)

// -----

// One combine merges one kind, or one online group: two plain kinds are two combines.
func.func @combine_two_kinds(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %v = loop.load %xb[%t] : memref<64xf32>
    %s, %m = tile.combine add, max %v, %v across %t : f32, f32
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.combine: one kind, or one online group, a combine

// -----

func.func @combine_online_sum_first(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %v = loop.load %xb[%t] : memref<64xf32>
    %s, %m = tile.combine online_sum, online_max %v, %v across %t : f32, f32
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.combine: an online_sum must follow an online_max (or a sum of its group)

// -----

func.func @combine_across_block(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread, %b : 2 = block) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %v = loop.load %xb[%b * 32 + %t] : memref<64xf32>
    %s = tile.combine add %v across %b : f32
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.combine: b must be a thread axis of the enclosing tile.kernel

// -----

func.func @combine_across_value(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %v = loop.load %xb[%t] : memref<64xf32>
    %i = arith.constant 0 : index
    %s = tile.combine add %v across %i : f32
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.combine: i must be a thread axis of the enclosing tile.kernel

// -----

func.func @stage_past_the_end(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread, %b : 4 = block) ins(%xb = %x : tensor<4x64xf32>) outs(%yb : tensor<4x64xf32>) {
    %s = tile.stage %xb[%b, 8] : memref<4x64xf32> -> memref<64xf32>
  }
  func.return %y : tensor<4x64xf32>
}

// CHECK: tile.stage: dimension 1 of the slab leaves the source's extent 64

// -----

func.func @stage_per_thread(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = tile.kernel @k axes(%t : 4 = thread) ins(%xb = %x : tensor<4x64xf32>) outs(%yb : tensor<4x64xf32>) {
    %s = tile.stage %xb[%t, 0] : memref<4x64xf32> -> memref<64xf32>
  }
  func.return %y : tensor<4x64xf32>
}

// CHECK: tile.stage: the origin must be block-uniform (constants, block axes and the enclosing loop's induction variable)

// -----

func.func @stage_an_output(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) {
    %s = tile.stage %yb[0] : memref<64xf32> -> memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.stage: only an input buffer of the kernel is staged

// -----

func.func @stage_too_big(%x: tensor<2x40000xf32>) -> tensor<2x40000xf32> {
  %y = tile.kernel @k axes(%t : 32 = thread) ins(%xb = %x : tensor<2x40000xf32>) outs(%yb : tensor<2x40000xf32>) {
    %s = tile.stage %xb[0, 0] : memref<2x40000xf32> -> memref<2x40000xf32>
  }
  func.return %y : tensor<2x40000xf32>
}

// CHECK: tile.stage: the kernel's slabs take 320000 bytes of shared memory, more than the target's 232448 per block

// -----

func.func @load_outside_the_slab(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread, %b : 4 = block) ins(%xb = %x : tensor<4x64xf32>) outs(%yb : tensor<4x64xf32>) {
    %s = tile.stage %xb[%b, 32] : memref<4x64xf32> -> memref<32xf32>
    %v = loop.load %s[%t] : memref<32xf32>
  }
  func.return %y : tensor<4x64xf32>
}

// CHECK: loop.load: index 0 ranges over [0, 63], outside the buffer's extent 32

// -----

func.func @stage_wrong_stored_type(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<64x32xf32>) outs(%yb : tensor<64x32xf32>) {
    %s = tile.stage %xb[0, 0] box [64, 32] transpose pad 4 : memref<64x32xf32> -> memref<32x64xf32>
  }
  func.return %y : tensor<64x32xf32>
}

// CHECK: tile.stage: box [64, 32] transposed with pad 4 is stored as [32, 68], not [32, 64]

// -----

func.func @stage_in_a_nested_loop(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<64x32xf32>) outs(%yb : tensor<64x32xf32>) {
    loop.for %i = 0 to 2 {
      loop.for %j = 0 to 2 {
        %s = tile.stage %xb[0, 0] : memref<64x32xf32> -> memref<64x32xf32>
      }
    }
  }
  func.return %y : tensor<64x32xf32>
}

// CHECK: tile.stage: stages sit at the top level of a tile.kernel or of a loop.for there

// -----

func.func @stage_top_level_double_buffered(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread, %b : 4 = block) ins(%xb = %x : tensor<4x64xf32>) outs(%yb : tensor<4x64xf32>) {
    %s = tile.stage %xb[%b, 0] buffers 2 : memref<4x64xf32> -> memref<64xf32>
  }
  func.return %y : tensor<4x64xf32>
}

// CHECK: tile.stage: only a stage refilled in a loop is multi-buffered

// -----

func.func @stage_top_level_async_half(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %y = tile.kernel @k axes(%t : 64 = thread, %b : 4 = block) ins(%xb = %x : tensor<4x64xf16>) outs(%yb : tensor<4x64xf16>) {
    %s = tile.stage %xb[%b, 0] async : memref<4x64xf16> -> memref<64xf16>
  }
  func.return %y : tensor<4x64xf16>
}

// CHECK: tile.stage: an async stage's elements are 4 bytes or more (cp.async copies 4, 8 or 16 bytes)

// -----

func.func @stage_quadruple_buffered(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<64x32xf32>) outs(%yb : tensor<64x32xf32>) {
    loop.for %ko = 0 to 4 {
      %s = tile.stage %xb[0, %ko * 8] box [64, 8] buffers 4 async : memref<64x32xf32> -> memref<64x8xf32>
    }
  }
  func.return %y : tensor<64x32xf32>
}

// CHECK: tile.stage: buffers 4 must be 1, 2 or 3

// -----

func.func @stage_triple_buffered_by_loads(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<64x32xf32>) outs(%yb : tensor<64x32xf32>) {
    loop.for %ko = 0 to 4 {
      %s = tile.stage %xb[0, %ko * 8] box [64, 8] buffers 3 : memref<64x32xf32> -> memref<64x8xf32>
    }
  }
  func.return %y : tensor<64x32xf32>
}

// CHECK: tile.stage: buffers 3 only for an async stage (cp.async keeps two chunks in flight; loads into registers rotate two buffers)

// -----

func.func @async_single_buffer(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<64x32xf32>) outs(%yb : tensor<64x32xf32>) {
    loop.for %i = 0 to 2 {
      %s = tile.stage %xb[0, 0] async : memref<64x32xf32> -> memref<64x32xf32>
    }
  }
  func.return %y : tensor<64x32xf32>
}

// CHECK: tile.stage: an async stage in a loop needs buffers 2 or 3 (the copy of the next chunk lands while this one is read)

// -----

func.func @combine_across_31_threads(%x: tensor<31xf32>) -> tensor<31xf32> {
  %y = tile.kernel @k axes(%t : 31 = thread) ins(%xb = %x : tensor<31xf32>) outs(%yb : tensor<31xf32>) {
    %v = loop.load %xb[%t] : memref<31xf32>
    %s = tile.combine add %v across %t : f32
  }
  func.return %y : tensor<31xf32>
}

// CHECK: tile.combine: across 31 threads; warp shuffles combine a power of two up to 32 or whole warps of 32

// -----

func.func @schedule_attribute_not_a_schedule(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<64xf32>) outs(%yb : tensor<64xf32>) attributes {schedule = array<i64: 16, 16>} {
  }
  func.return %y : tensor<64xf32>
}

// CHECK: tile.kernel: attribute schedule must be a #tile.schedule, got array<i64: 16, 16>

// -----

func.func @combine_in_a_partial_warp(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tile.kernel @k axes(%t : 8 = thread) ins(%xb = %x : tensor<8xf32>) outs(%yb : tensor<8xf32>) {
    %v = loop.load %xb[%t] : memref<8xf32>
    %s = tile.combine add %v across %t : f32
  }
  func.return %y : tensor<8xf32>
}

// CHECK: tile.combine: the kernel's 8 threads per block are not whole warps of 32; warp shuffles need every lane of a warp
