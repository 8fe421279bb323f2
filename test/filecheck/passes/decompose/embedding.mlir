// RUN: deplo-opt %s -p decompose | filecheck %s

// An embedding is a gather of the weight's rows.
func.func @embedding(%w: tensor<128x64xf32>, %ids: tensor<1x8xi64>) -> tensor<1x8x64xf32> {
  %embedding = torch.aten "embedding.default"(weight = %w, indices = %ids) : (tensor<128x64xf32>, tensor<1x8xi64>) -> tensor<1x8x64xf32>
  func.return %embedding : tensor<1x8x64xf32>
}

// CHECK-LABEL: func.func @embedding
// CHECK-NEXT:    %embedding = ten.gather %w[%ids] axis 0 : tensor<128x64xf32>, tensor<1x8xi64> -> tensor<1x8x64xf32>
// CHECK-NEXT:    func.return %embedding : tensor<1x8x64xf32>
