// RUN: not deplo-opt %s 2>&1 | filecheck %s

// A constant its type cannot hold is a parse error at its place, not a traceback.
func.func @f() -> f16 {
  %0 = arith.constant 0xff800000 : f16
  func.return %0 : f16
}

// CHECK: constant_overflow.mlir:5:36: error: OverflowError: int too big to convert
// CHECK-NEXT: %0 = arith.constant 0xff800000 : f16
// CHECK-NOT: Traceback
