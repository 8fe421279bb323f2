// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the loop dialect (dialects/loop.py) and of the shared
// access rules (dialects/access.py, affine_syntax.check_in_bounds).

// The custom syntax derives buffer types from the tensors, so a signature mismatch can
// only be written in the generic form.
func.func @kernel_buffer_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "loop.kernel"(%x) <{sym_name = "k"}> ({
  ^bb0(%xb: memref<4xf32>):
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: loop.kernel: body has 1 buffer arguments for 1 operands and 1 results

// -----

func.func @kernel_buffer_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "loop.kernel"(%x) <{sym_name = "k"}> ({
  ^bb0(%xb: memref<8xf32>, %yb: memref<4xf32>):
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: loop.kernel: buffer argument 0 is memref<8xf32>, expected memref<4xf32> for tensor<4xf32>

// -----

func.func @kernel_isolated(%x: tensor<4xf32>, %f: f32) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      loop.store %f, %yb[%a0] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: Operation using value defined out of its IsolatedFromAbove parent: StoreOp(loop.store %f, %yb[%a0] : memref<4xf32>)

// -----

func.func @for_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 4 to 0 {
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: loop.for: upper bound 0 is below lower bound 4

// -----

func.func @reduce_kind(%x: tensor<4xf32>) -> tensor<f32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<f32>) {
    %s = loop.for %a0 = 0 to 4 reduce(mean) -> f32 {
      %v = loop.load %xb[%a0] : memref<4xf32>
      loop.yield %v : f32
    }
    loop.store %s, %yb[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK: loop.for: unknown reduction kind 'mean' (known: add, mul, max, min, online_max, online_sum)

// -----

// The online group (dialects/combine.py): an online_sum belongs to the online_max before it.
func.func @online_sum_alone(%x: tensor<4xf32>) -> tensor<f32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<f32>) {
    %s = loop.for %a0 = 0 to 4 reduce(online_sum) -> f32 {
      %v = loop.load %xb[%a0] : memref<4xf32>
      loop.yield %v : f32
    }
    loop.store %s, %yb[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK: loop.for: an online_sum must follow an online_max (or a sum of its group)

// -----

func.func @online_max_alone(%x: tensor<4xf32>) -> tensor<f32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<f32>) {
    %m, %s = loop.for %a0 = 0 to 4 reduce(online_max, add) -> (f32, f32) {
      %v = loop.load %xb[%a0] : memref<4xf32>
      loop.yield %v, %v : f32, f32
    }
    loop.store %s, %yb[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK: loop.for: an online_max needs one or more online_sum entries after it

// -----

func.func @online_of_integers(%x: tensor<4xi32>) -> tensor<i32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xi32>) outs(%yb : tensor<i32>) {
    %m, %s = loop.for %a0 = 0 to 4 reduce(online_max, online_sum) -> (i32, i32) {
      %v = loop.load %xb[%a0] : memref<4xi32>
      loop.yield %v, %v : i32, i32
    }
    loop.store %s, %yb[] : memref<i32>
  }
  func.return %y : tensor<i32>
}

// CHECK: loop.for: an online group's results are floats of one type

// -----

func.func @reduce_kinds_count(%x: tensor<4xf32>) -> tensor<f32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<f32>) {
    %s = "loop.for"() <{lower = #builtin.int<0>, upper = #builtin.int<4>, reduce = ["add", "max"]}> ({
    ^bb0(%a0: index):
      %v = loop.load %xb[%a0] : memref<4xf32>
      loop.yield %v : f32
    }) : () -> f32
    loop.store %s, %yb[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK: loop.for: 2 reduction kinds for 1 results

// -----

func.func @for_induction_var(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    "loop.for"() <{lower = #builtin.int<0>, upper = #builtin.int<4>, reduce = []}> ({
    ^bb0(%a0: i32):
    }) : () -> ()
  }
  func.return %y : tensor<4xf32>
}

// CHECK: loop.for: the body takes exactly one index (the induction var)

// -----

func.func @reduce_yield_missing(%x: tensor<4xf32>) -> tensor<f32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<f32>) {
    %s = loop.for %a0 = 0 to 4 reduce(add) -> f32 {
      %v = loop.load %xb[%a0] : memref<4xf32>
    }
    loop.store %s, %yb[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK: loop.for: a reduce loop must yield one value per accumulator

// -----

func.func @reduce_yield_type(%x: tensor<4xf32>) -> tensor<f32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<f32>) {
    %s = loop.for %a0 = 0 to 4 reduce(add) -> f32 {
      %v = loop.load %xb[%a0] : memref<4xf32>
      %h = arith.truncf %v : f32 to f16
      loop.yield %h : f16
    }
    loop.store %s, %yb[] : memref<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK: loop.for: a reduce loop must yield one value per accumulator

// -----

func.func @free_loop_yields(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      %v = loop.load %xb[%a0] : memref<4xf32>
      loop.store %v, %yb[%a0] : memref<4xf32>
      loop.yield %v : f32
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: loop.for: a free loop yields nothing

// -----

func.func @load_out_of_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      %v = loop.load %xb[%a0 + 1] : memref<4xf32>
      loop.store %v, %yb[%a0] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: loop.load: index 0 ranges over [1, 4], outside the buffer's extent 4

// -----

func.func @load_through_apply_out_of_bounds(%x: tensor<8xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<8xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      %i = affine.apply affine_map<(d0) -> (d0 * 2 + 2)> (%a0)
      %v = loop.load %xb[%i] : memref<8xf32>
      loop.store %v, %yb[%a0] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: loop.load: index 0 ranges over [2, 8], outside the buffer's extent 8

// -----

func.func @load_rank(%x: tensor<4x4xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4x4xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      %v = loop.load %xb[%a0] : memref<4x4xf32>
      loop.store %v, %yb[%a0] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: loop.load: 1 indices for a buffer of rank 2

// -----

func.func @load_map_operands(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      %v = "loop.load"(%xb, %a0, %a0) <{map = affine_map<(d0) -> (d0)>}> : (memref<4xf32>, index, index) -> f32
      loop.store %v, %yb[%a0] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: loop.load: index map has 1 dims but 2 index operands

// -----

func.func @load_result_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf16>) {
    loop.for %a0 = 0 to 4 {
      %v = "loop.load"(%xb, %a0) <{map = affine_map<(d0) -> (d0)>}> : (memref<4xf32>, index) -> f16
      loop.store %v, %yb[%a0] : memref<4xf16>
    }
  }
  func.return %y : tensor<4xf16>
}

// CHECK: loop.load: result type differs from the buffer's elements

// -----

func.func @store_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf16>) {
    loop.for %a0 = 0 to 4 {
      %v = loop.load %xb[%a0] : memref<4xf32>
      "loop.store"(%v, %yb, %a0) <{map = affine_map<(d0) -> (d0)>}> : (f32, memref<4xf16>, index) -> ()
    }
  }
  func.return %y : tensor<4xf16>
}

// CHECK: loop.store: stores f32 into a buffer of f16

// -----

func.func @store_out_of_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<4xf32>) outs(%yb : tensor<4xf32>) {
    loop.for %a0 = 0 to 4 {
      %v = loop.load %xb[%a0] : memref<4xf32>
      loop.store %v, %yb[3 - %a0 * 2] : memref<4xf32>
    }
  }
  func.return %y : tensor<4xf32>
}

// CHECK: loop.store: index 0 ranges over [-3, 3], outside the buffer's extent 4
