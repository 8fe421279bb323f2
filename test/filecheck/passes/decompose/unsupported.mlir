// RUN: not deplo-opt %s -p decompose 2>&1 | filecheck %s

// Every op without a decomposition is listed at once, with where it came from, and why
// when a decomposition declined the call's arguments.
func.func @forward(%x: tensor<3x4xf32>, %s: tensor<0x4xf32>) -> (tensor<4xf32>, tensor<4xi64>) {
  %kthvalue = torch.aten "kthvalue.default"(self = %x) {k = 2, dim = 0, source = "model.py:7: y = torch.kthvalue(x, 2, 0).values"} : (tensor<3x4xf32>) -> tensor<4xf32>
  %relu = torch.aten "relu.default"(self = %kthvalue) : (tensor<4xf32>) -> tensor<4xf32>
  %sort = torch.aten "sort.default"(self = %relu) {source = "model.py:8: z = x.sort()"} : (tensor<4xf32>) -> tensor<4xf32>
  %argmax = torch.aten "argmax.default"(self = %s) {dim = 0, source = "model.py:9: p = s.argmax(0)"} : (tensor<0x4xf32>) -> tensor<4xi64>
  func.return %sort, %argmax : tensor<4xf32>, tensor<4xi64>
}

// CHECK:      error: 3 unsupported ops:
// CHECK-NEXT:   aten.kthvalue.default at model.py:7: y = torch.kthvalue(x, 2, 0).values
// CHECK-NEXT:   aten.sort.default at model.py:8: z = x.sort()
// CHECK-NEXT:   aten.argmax.default (argmax over an empty axis (torch refuses it)) at model.py:9: p = s.argmax(0)
