// RUN: not deplo-opt %s -p decompose 2>&1 | filecheck %s

// Every op without a decomposition is listed at once, with where it came from, and why
// when a decomposition declined the call's arguments.
func.func @forward(%x: tensor<3x4xf32>, %s: tensor<f32>) -> (tensor<3x4xf32>, tensor<f32>) {
  %cumprod = torch.aten "cumprod.default"(self = %x) {dim = 0, source = "model.py:7: y = torch.cumprod(x, 0)"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %relu = torch.aten "relu.default"(self = %cumprod) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %sort = torch.aten "sort.default"(self = %relu) {source = "model.py:8: z = x.sort()"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %softmax = torch.aten "softmax.int"(self = %s) {dim = 0, source = "model.py:9: p = s.softmax(0)"} : (tensor<f32>) -> tensor<f32>
  func.return %sort, %softmax : tensor<3x4xf32>, tensor<f32>
}

// CHECK:      error: 3 unsupported ops:
// CHECK-NEXT:   aten.cumprod.default at model.py:7: y = torch.cumprod(x, 0)
// CHECK-NEXT:   aten.sort.default at model.py:8: z = x.sort()
// CHECK-NEXT:   aten.softmax.int (softmax of a 0-d tensor) at model.py:9: p = s.softmax(0)
