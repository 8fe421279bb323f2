// RUN: deplo-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The custom syntax names every operand, so counts can only disagree in generic form.
func.func @operand_count(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "torch.aten"(%x, %y) <{target = "add.Tensor", tensor_args = ["self"]}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: 'torch.aten' "add.Tensor": operand count (2) must equal the number of tensor_args (1); each operand needs its schema argument name

// -----

func.func @not_a_tensor(%x: f32) -> tensor<f32> {
  %0 = torch.aten "relu.default"(self = %x) : (f32) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK: 'torch.aten' "relu.default": operand #0 (self) must be a builtin tensor, got f32

// -----

func.func @result_not_a_tensor(%x: tensor<f32>) -> f32 {
  %0 = torch.aten "item.default"(self = %x) : (tensor<f32>) -> f32
  func.return %0 : f32
}

// CHECK: 'torch.aten' "item.default": result #0 must be a builtin tensor, got f32

// -----

func.func @no_result(%x: tensor<f32>) {
  torch.aten "_assert_tensor_metadata.default"(a = %x) : (tensor<f32>) -> ()
  func.return
}

// CHECK: 'torch.aten' "_assert_tensor_metadata.default": must have at least one tensor result

// -----

func.func @empty_target(%x: tensor<f32>) -> tensor<f32> {
  %0 = torch.aten ""(self = %x) : (tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK: 'torch.aten': target must name an ATen overload, got ''
