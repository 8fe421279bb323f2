// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// SSA scope (dialects/scope.py): one case per way a use escapes its definition.

// A load moved above the loop whose index it reads.
func.func @outside_its_loop(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<8xf32>) outs(%yb : tensor<8xf32>) {
    %v = loop.load %xb[%i] : memref<8xf32>
    loop.for %i = 0 to 8 {
      loop.store %v, %yb[%i] : memref<8xf32>
    }
  }
  func.return %y : tensor<8xf32>
}

// CHECK: 'loop.load' uses %i, an argument of the body of 'loop.for', outside that body

// -----

// Two lines of a loop body swapped: a use before its definition.
func.func @before_its_definition(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<8xf32>) outs(%yb : tensor<8xf32>) {
    loop.for %i = 0 to 8 {
      %w = arith.mulf %v, %v : f32
      %v = loop.load %xb[%i] : memref<8xf32>
      loop.store %w, %yb[%i] : memref<8xf32>
    }
  }
  func.return %y : tensor<8xf32>
}

// CHECK: 'arith.mulf' uses %v before 'loop.load' defines it

// -----

// A loop whose start is defined inside its own body (a line moved into the loop): the
// parser leaves the outer use a placeholder.
func.func @start_inside_its_loop(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = kernel.kernel @k grid(1, 1, 1) block(1, 1, 1) ins(%xb = %x : tensor<8xf32>) outs(%yb : tensor<8xf32>) {
    kernel.for %i = %c0 to 8 step 1 {
      %c0 = arith.constant 0 : index
      %v = kernel.load %xb[%i] : memref<8xf32>
      kernel.store %v, %yb[%i] : memref<8xf32>
    }
  }
  func.return %y : tensor<8xf32>
}

// CHECK: 'kernel.for' uses a value, which is not defined where it is visible

// -----

// A value that is its own operand (a renamed use).
func.func @its_own_operand(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = loop.kernel @k ins(%xb = %x : tensor<8xf32>) outs(%yb : tensor<8xf32>) {
    loop.for %i = 0 to 8 {
      %v = arith.addf %v, %v : f32
      loop.store %v, %yb[%i] : memref<8xf32>
    }
  }
  func.return %y : tensor<8xf32>
}

// CHECK: 'arith.addf' uses %v before 'arith.addf' defines it

// -----

// At a function's top level too (func.func is xDSL's: the scope check covers it).
func.func @swapped_at_the_top(%x: f32) -> f32 {
  %b = arith.mulf %a, %a : f32
  %a = arith.addf %x, %x : f32
  func.return %b : f32
}

// CHECK: 'arith.mulf' uses %a before 'arith.addf' defines it
