// RUN: deplo-opt %s -p decompose | filecheck %s

// One ten.map each, the body the upstream math op (or a short arith formula); neg is
// arith.negf, so neg(0.0) is -0.0 as in torch.
func.func @unary(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %rsqrt = torch.aten "rsqrt.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  %exp = torch.aten "exp.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  %neg = torch.aten "neg.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  %silu = torch.aten "silu.default"(self = %x) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %rsqrt, %exp, %neg, %silu : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %rsqrt = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[R:.*]] = math.rsqrt %[[A]] : f32
// CHECK-NEXT:      ten.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %exp = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[B:.*]]: f32):
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[B]] : f32
// CHECK-NEXT:      ten.yield %[[E]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %neg = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[C:.*]]: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[C]] : f32
// CHECK-NEXT:      ten.yield %[[N]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %silu = ten.map(%x) : tensor<8xf32> -> tensor<8xf32> {
// CHECK:           math.exp
// CHECK:           arith.divf
// CHECK-NEXT:      arith.mulf

// cos and sin (the rotary embedding's tables) are upstream math ops.
func.func @trig(%x: tensor<1x8x16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8x16xf32>) {
  %cos = torch.aten "cos.default"(self = %x) : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  %sin = torch.aten "sin.default"(self = %x) : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  func.return %cos, %sin : tensor<1x8x16xf32>, tensor<1x8x16xf32>
}

// CHECK-LABEL: func.func @trig
// CHECK:         %cos = ten.map(%x)
// CHECK:           math.cos %{{.*}} : f32
// CHECK:         %sin = ten.map(%x)
// CHECK:           math.sin %{{.*}} : f32
