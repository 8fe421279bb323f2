// RUN: deplo-opt %s -p lift-to-loop --print-debuginfo | filecheck %s
// RUN: deplo-opt %s -p lift-to-loop | filecheck %s --check-prefix=PLAIN

// Provenance: a ten op's location names the torch ops it computes (decompose puts it
// there). The kernel lifted from it covers those ops, in order, and the kernel and every
// op in it carry the location. Without --print-debuginfo the listing shows only `covers`.
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = ten.map(%x) : tensor<4x8xf32> -> tensor<4x8xf32> {
  ^bb0(%a: f32):
    %r = math.exp %a : f32
    ten.yield %r : f32
  } loc(fused["to"(callsite("aten.to.dtype" at "m.py":3:0)), "exp"(callsite("aten.exp.default" at "layer.act"("m.py":4:0)))])
  %s = ten.reduce add %e dims [1] : tensor<4x8xf32> -> tensor<4xf32> loc("sum"(callsite("aten.sum.dim_IntList" at "m.py":5:0)))
  %t = ten.index_map %s (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x8xf32>
  func.return %t : tensor<4x8xf32>
}

// CHECK:      %e = loop.kernel @k_e ins(%x_b = %x : tensor<4x8xf32>) outs(%e_b : tensor<4x8xf32>) attributes {covers = ["to", "exp"]} {
// CHECK:          %r = math.exp %a : f32 loc(fused["to"(callsite("aten.to.dtype" at "m.py":3:0)), "exp"(callsite("aten.exp.default" at "layer.act"("m.py":4:0)))])
// CHECK:          loop.store %r, %e_b[%a0, %a1] : memref<4x8xf32> loc(fused["to"(callsite("aten.to.dtype" at "m.py":3:0)), "exp"(callsite("aten.exp.default" at "layer.act"("m.py":4:0)))])
// CHECK:      } loc(fused["to"(callsite("aten.to.dtype" at "m.py":3:0)), "exp"(callsite("aten.exp.default" at "layer.act"("m.py":4:0)))])
// CHECK:      %s = loop.kernel @k_s {{.*}} attributes {covers = ["sum"]} {
// CHECK:      } loc("sum"(callsite("aten.sum.dim_IntList" at "m.py":5:0)))
// An op without provenance (a hand-written tensor level) covers its own result's name.
// CHECK:      %t = loop.kernel @k_t {{.*}} attributes {covers = ["t"]} {
// CHECK:      } loc(unknown)

// PLAIN-NOT:  loc(
// PLAIN:      attributes {covers = ["to", "exp"]}
// PLAIN:      attributes {covers = ["sum"]}
// PLAIN:      attributes {covers = ["t"]}
