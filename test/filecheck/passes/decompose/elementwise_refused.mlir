// RUN: not deplo-opt %s -p decompose 2>&1 | filecheck %s

// What the elementwise decompositions decline, each with its reason: polygamma of order
// 1 and up (the Hurwitz zeta function), nextafter of a 16-bit float (its bits are not
// stepped), a negative integer power (torch raises), rounding an integer to decimals.
func.func @forward(%x: tensor<8xf32>, %h: tensor<8xbf16>, %i: tensor<8xi64>) -> (tensor<8xf32>, tensor<8xbf16>, tensor<8xi64>, tensor<8xi64>) {
  %p = torch.aten "polygamma.default"(self = %x) {n = 2, source = "m.py:1: torch.polygamma(2, x)"} : (tensor<8xf32>) -> tensor<8xf32>
  %n = torch.aten "nextafter.default"(self = %h, other = %h) {source = "m.py:2: torch.nextafter(h, h)"} : (tensor<8xbf16>, tensor<8xbf16>) -> tensor<8xbf16>
  %q = torch.aten "pow.Tensor_Scalar"(self = %i) {exponent = -2, source = "m.py:3: i ** -2"} : (tensor<8xi64>) -> tensor<8xi64>
  %r = torch.aten "round.decimals"(self = %i) {decimals = 2, source = "m.py:4: i.round(decimals=2)"} : (tensor<8xi64>) -> tensor<8xi64>
  func.return %p, %n, %q, %r : tensor<8xf32>, tensor<8xbf16>, tensor<8xi64>, tensor<8xi64>
}

// CHECK:      error: 4 unsupported ops:
// CHECK-NEXT:   aten.polygamma.default (polygamma of order 2 (only order 0, digamma, is compiled: higher orders need the Hurwitz zeta function)) at m.py:1: torch.polygamma(2, x)
// CHECK-NEXT:   aten.nextafter.default (nextafter of bf16 values (f32 and f64 only)) at m.py:2: torch.nextafter(h, h)
// CHECK-NEXT:   aten.pow.Tensor_Scalar (integer pow with exponent -2) at m.py:3: i ** -2
// CHECK-NEXT:   aten.round.decimals (round to 2 decimals of i64 values) at m.py:4: i.round(decimals=2)
