// RUN: deplo-opt %s | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// The torch dialect prints every captured ATen call in its custom form, operands named by
// their schema argument; i64 and f64 values print without their (default) types.

func.func @forward(%p_weight: tensor<2048xf32> {torch.kind = "param", torch.target = "weight"}, %x: tensor<1x32x2048xf32> {torch.kind = "input"}) -> tensor<1x32x2048xf32> {
  %rms_norm = torch.aten "rms_norm.default"(input = %x, weight = %p_weight) {normalized_shape = [2048], eps = 1.000000e-06, source = "<expression>:1: torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"} : (tensor<1x32x2048xf32>, tensor<2048xf32>) -> tensor<1x32x2048xf32>
  func.return %rms_norm : tensor<1x32x2048xf32>
}

// CHECK:      func.func @forward(%p_weight: tensor<2048xf32> {torch.kind = "param", torch.target = "weight"}, %x: tensor<1x32x2048xf32> {torch.kind = "input"}) -> tensor<1x32x2048xf32> {
// CHECK-NEXT:   %rms_norm = torch.aten "rms_norm.default"(input = %x, weight = %p_weight) {normalized_shape = [2048], eps = 1.000000e-06, source = "<expression>:1: torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"} : (tensor<1x32x2048xf32>, tensor<2048xf32>) -> tensor<1x32x2048xf32>
// CHECK-NEXT:   func.return %rms_norm : tensor<1x32x2048xf32>

func.func @values(%x: tensor<6x2xf32>, %m: tensor<6x2xi1>, %idx: tensor<2xi64>) -> tensor<6x2xbf16> {
  // Scalars: a -inf float keeps its type (hex literal), bools print as true/false.
  %fill = torch.aten "masked_fill.Scalar"(self = %x, mask = %m) {value = 0xFFF0000000000000 : f64} : (tensor<6x2xf32>, tensor<6x2xi1>) -> tensor<6x2xf32>
  %sm = torch.aten "_softmax.default"(self = %fill) {dim = -1, half_to_float = false} : (tensor<6x2xf32>) -> tensor<6x2xf32>
  // A tensor list is spread; a Tensor?[] records where the tensors are.
  %cat = torch.aten "cat.default"(tensors = %sm, tensors = %fill) {dim = 0} : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<12x2xf32>
  %index = torch.aten "index.Tensor"(self = %x, indices = %idx) {indices = [false, true]} : (tensor<6x2xf32>, tensor<2xi64>) -> tensor<6x2xf32>
  // Several results; a dtype is its builtin element type; no operands at all.
  %out, %mean, %rstd = torch.aten "native_layer_norm.default"(input = %index) {normalized_shape = [2], eps = 1.000000e-05} : (tensor<6x2xf32>) -> (tensor<6x2xf32>, tensor<6x1xf32>, tensor<6x1xf32>)
  %to = torch.aten "to.dtype"(self = %out) {dtype = bf16} : (tensor<6x2xf32>) -> tensor<6x2xbf16>
  %z = torch.aten "zeros.default"() {size = [6, 2], dtype = bf16} : () -> tensor<6x2xbf16>
  // Strings, lists with a None, floats that need all their digits.
  %g = torch.aten "gelu.default"(self = %to) {approximate = "tanh"} : (tensor<6x2xbf16>) -> tensor<6x2xbf16>
  %up = torch.aten "upsample_nearest1d.vec"(input = %g) {output_size = none, scale_factors = [1.0, none, 0.1], x = 0.3333333333333333} : (tensor<6x2xbf16>) -> tensor<6x2xbf16>
  %conv = torch.aten "prims.convert_element_type.default"(a = %up) {dtype = bf16} : (tensor<6x2xbf16>) -> tensor<6x2xbf16>
  func.return %conv : tensor<6x2xbf16>
}

// CHECK:      %fill = torch.aten "masked_fill.Scalar"(self = %x, mask = %m) {value = 0xfff0000000000000 : f64} : (tensor<6x2xf32>, tensor<6x2xi1>) -> tensor<6x2xf32>
// CHECK-NEXT: %sm = torch.aten "_softmax.default"(self = %fill) {dim = -1, half_to_float = false} : (tensor<6x2xf32>) -> tensor<6x2xf32>
// CHECK-NEXT: %cat = torch.aten "cat.default"(tensors = %sm, tensors = %fill) {dim = 0} : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<12x2xf32>
// CHECK-NEXT: %index = torch.aten "index.Tensor"(self = %x, indices = %idx) {indices = [false, true]} : (tensor<6x2xf32>, tensor<2xi64>) -> tensor<6x2xf32>
// CHECK-NEXT: %out, %mean, %rstd = torch.aten "native_layer_norm.default"(input = %index) {normalized_shape = [2], eps = 1.000000e-05} : (tensor<6x2xf32>) -> (tensor<6x2xf32>, tensor<6x1xf32>, tensor<6x1xf32>)
// CHECK-NEXT: %to = torch.aten "to.dtype"(self = %out) {dtype = bf16} : (tensor<6x2xf32>) -> tensor<6x2xbf16>
// CHECK-NEXT: %z = torch.aten "zeros.default"() {size = [6, 2], dtype = bf16} : () -> tensor<6x2xbf16>
// CHECK-NEXT: %g = torch.aten "gelu.default"(self = %to) {approximate = "tanh"} : (tensor<6x2xbf16>) -> tensor<6x2xbf16>
// CHECK-NEXT: %up = torch.aten "upsample_nearest1d.vec"(input = %g) {output_size = none, scale_factors = [1.000000e+00, none, 1.000000e-01], x = 0.3333333333333333} : (tensor<6x2xbf16>) -> tensor<6x2xbf16>
// CHECK-NEXT: %conv = torch.aten "prims.convert_element_type.default"(a = %up) {dtype = bf16} : (tensor<6x2xbf16>) -> tensor<6x2xbf16>
