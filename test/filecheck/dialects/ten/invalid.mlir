// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the ten dialect.

func.func @map_shape(%x: tensor<4xf32>, %y: tensor<8xf32>) -> tensor<4xf32> {
  %r = ten.map(%x, %y) : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    ten.yield %c : f32
  }
  func.return %r : tensor<4xf32>
}

// CHECK: ten.map: operand 1 has shape (8,) but the result has (4,); broadcast it with ten.index_map first

// -----

func.func @map_arity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = ten.map(%x) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    ten.yield %a : f32
  }
  func.return %r : tensor<4xf32>
}

// CHECK: ten.map: body takes 2 scalars for 1 operands

// -----

func.func @map_arg_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = ten.map(%x) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%a: f16):
    %e = arith.extf %a : f16 to f32
    ten.yield %e : f32
  }
  func.return %r : tensor<4xf32>
}

// CHECK: ten.map: body argument 0 is f16, operand element type is f32

// -----

func.func @map_yield_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  %r = ten.map(%x) : tensor<4xf32> -> tensor<4xf16> {
  ^bb0(%a: f32):
    ten.yield %a : f32
  }
  func.return %r : tensor<4xf16>
}

// CHECK: ten.map: body yields f32, result element type is f16

// -----

func.func @yield_outside_map(%a: f32) {
  ten.yield %a : f32
}

// CHECK: 'ten.yield' expects parent op 'ten.map'

// -----

func.func @reduce_kind(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = ten.reduce mean %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK: ten.reduce: unknown kind 'mean' (known: add, mul, max, min)

// -----

func.func @reduce_dims_range(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = ten.reduce add %x dims [2] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK: ten.reduce: dims [2] must be sorted, unique axes of a rank-2 operand

// -----

func.func @reduce_dims_order(%x: tensor<4x8x2xf32>) -> tensor<8xf32> {
  %r = ten.reduce add %x dims [2, 0] : tensor<4x8x2xf32> -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// CHECK: ten.reduce: dims [2, 0] must be sorted, unique axes of a rank-3 operand

// -----

func.func @reduce_no_dims(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = ten.reduce add %x dims [] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK: ten.reduce: dims [] must be sorted, unique axes of a rank-2 operand

// -----

func.func @reduce_result_shape(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %r = ten.reduce add %x dims [1] : tensor<4x8xf32> -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// CHECK: ten.reduce: reducing dims [1] of (4, 8) gives (4,), not (8,)

// -----

func.func @reduce_element(%x: tensor<4x8xf32>) -> tensor<4xf16> {
  %r = ten.reduce add %x dims [1] : tensor<4x8xf32> -> tensor<4xf16>
  func.return %r : tensor<4xf16>
}

// CHECK: ten.reduce: result element type differs from the operand's

// -----

func.func @index_map_dims(%x: tensor<64xf32>) -> tensor<4x64xf32> {
  %r = ten.index_map %x (d0) -> (d0) : tensor<64xf32> -> tensor<4x64xf32>
  func.return %r : tensor<4x64xf32>
}

// CHECK: ten.index_map: map (d0) -> (d0) must take one dim per result axis (2)

// -----

func.func @index_map_results(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %r = ten.index_map %x (d0, d1) -> (d1) : tensor<4x64xf32> -> tensor<4x64xf32>
  func.return %r : tensor<4x64xf32>
}

// CHECK: ten.index_map: map (d0, d1) -> (d1) must give one index per source axis (2)

// -----

func.func @index_map_element(%x: tensor<64xf32>) -> tensor<4x64xf16> {
  %r = ten.index_map %x (d0, d1) -> (d1) : tensor<64xf32> -> tensor<4x64xf16>
  func.return %r : tensor<4x64xf16>
}

// CHECK: ten.index_map: a view cannot change the element type

// -----

func.func @index_map_bounds(%x: tensor<64xf32>) -> tensor<4x64xf32> {
  %r = ten.index_map %x (d0, d1) -> (d1 + 1) : tensor<64xf32> -> tensor<4x64xf32>
  func.return %r : tensor<4x64xf32>
}

// CHECK: ten.index_map: source index 0 ((d1 + 1)) ranges over [1, 64], outside the source extent 64

// -----

func.func @constant_type() -> tensor<3xf32> {
  %c = "ten.constant"() <{value = dense<1.000000e+00> : tensor<4xf32>}> : () -> tensor<3xf32>
  func.return %c : tensor<3xf32>
}

// CHECK: ten.constant: result type differs from the literal's type

// -----

func.func @iota_dim(%x: tensor<4xf32>) {
  // CHECK: ten.iota: dim 2 is not an axis of a rank-2 result
  %i = ten.iota dim 2 : tensor<4x4xi64>
  func.return
}

// -----

func.func @gather_axis(%w: tensor<16x8xf32>, %ids: tensor<4xi64>) {
  // CHECK: ten.gather: axis 2 is not an axis of a rank-2 table
  %e = ten.gather %w[%ids] axis 2 : tensor<16x8xf32>, tensor<4xi64> -> tensor<16x8x4xf32>
  func.return
}

// -----

func.func @gather_ids(%w: tensor<16x8xf32>, %ids: tensor<4xf32>) {
  // CHECK: ten.gather: indices must hold integers, got f32
  %e = ten.gather %w[%ids] axis 0 : tensor<16x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @gather_shape(%w: tensor<16x8xf32>, %ids: tensor<2x3xi64>) {
  // CHECK: ten.gather: gathering (2, 3) indices on axis 0 of (16, 8) gives (2, 3, 8), not (6, 8)
  %e = ten.gather %w[%ids] axis 0 : tensor<16x8xf32>, tensor<2x3xi64> -> tensor<6x8xf32>
  func.return
}

// -----

func.func @gather_element(%w: tensor<16x8xf32>, %ids: tensor<4xi64>) {
  // CHECK: ten.gather: result element type differs from the table's
  %e = ten.gather %w[%ids] axis 0 : tensor<16x8xf32>, tensor<4xi64> -> tensor<4x8xf16>
  func.return
}
