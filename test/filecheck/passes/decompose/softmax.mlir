// RUN: deplo-opt %s -p decompose | filecheck %s

// softmax in the stable form: max, exp(x - max), sum, divide; reduced values put back
// next to the input by index_maps.
func.func @last(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %softmax = torch.aten "softmax.int"(self = %x) {dim = -1} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  func.return %softmax : tensor<2x3x8xf32>
}

// CHECK-LABEL: func.func @last
// CHECK-NEXT:    %max = ten.reduce max %x dims [2] : tensor<2x3x8xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %max_b = ten.index_map %max (d0, d1, d2) -> (d0, d1) : tensor<2x3xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %exp = ten.map(%x, %max_b) : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32> {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32):
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[V]], %[[M]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT:      ten.yield %[[E]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %sum = ten.reduce add %exp dims [2] : tensor<2x3x8xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %sum_b = ten.index_map %sum (d0, d1, d2) -> (d0, d1) : tensor<2x3xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %softmax = ten.map(%exp, %sum_b) : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[S:.*]]: f32):
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[A]], %[[S]] : f32
// CHECK-NEXT:      ten.yield %[[Q]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %softmax : tensor<2x3x8xf32>

// _softmax on a middle axis; bf16 is computed in f32 (the max too, exactly) and the
// result rounded once at the end.
func.func @middle_bf16(%x: tensor<2x3x8xbf16>) -> tensor<2x3x8xbf16> {
  %softmax = torch.aten "_softmax.default"(self = %x) {dim = 1, half_to_float = false} : (tensor<2x3x8xbf16>) -> tensor<2x3x8xbf16>
  func.return %softmax : tensor<2x3x8xbf16>
}

// CHECK-LABEL: func.func @middle_bf16
// CHECK-NEXT:    %x_f32 = ten.map(%x) : tensor<2x3x8xbf16> -> tensor<2x3x8xf32> {
// CHECK:         %max_f32 = ten.reduce max %x_f32 dims [1] : tensor<2x3x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %max = ten.map(%max_f32) : tensor<2x8xf32> -> tensor<2x8xbf16> {
// CHECK:         %max_b = ten.index_map %max (d0, d1, d2) -> (d0, d2) : tensor<2x8xbf16> -> tensor<2x3x8xbf16>
// CHECK-NEXT:    %exp = ten.map(%x, %max_b) : tensor<2x3x8xbf16>, tensor<2x3x8xbf16> -> tensor<2x3x8xf32> {
// CHECK:           arith.extf
// CHECK:           math.exp
// CHECK:         %sum = ten.reduce add %exp dims [1] : tensor<2x3x8xf32> -> tensor<2x8xf32>
// CHECK:         %softmax = ten.map(%exp, %sum_b) : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xbf16> {
// CHECK:           arith.divf
// CHECK-NEXT:      arith.truncf %{{.*}} : f32 to bf16
