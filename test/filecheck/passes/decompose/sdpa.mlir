// RUN: deplo-opt %s -p decompose | filecheck %s

// The form transformers' LlamaAttention uses with no mask: is_causal with grouped-query
// attention (4 query heads over 2 KV heads). Query head h reads KV head h floordiv 2
// inside the views of K and V; the causal mask is two iotas compared in the scores map.
func.func @causal_gqa(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %attn = torch.aten "scaled_dot_product_attention.default"(query = %q, key = %k, value = %v) {dropout_p = 0.000000e+00, is_causal = true, enable_gqa = true} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  func.return %attn : tensor<1x4x8x16xf32>
}

// CHECK-LABEL: func.func @causal_gqa
// CHECK-NEXT:    %q_b = ten.index_map %q (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : tensor<1x4x8x16xf32> -> tensor<1x4x8x8x16xf32>
// CHECK-NEXT:    %k_b = ten.index_map %k (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d3, d4) : tensor<1x2x8x16xf32> -> tensor<1x4x8x8x16xf32>
// CHECK-NEXT:    %qk_prod = ten.map(%q_b, %k_b) : tensor<1x4x8x8x16xf32>, tensor<1x4x8x8x16xf32> -> tensor<1x4x8x8x16xf32> {
// CHECK:           arith.mulf
// CHECK:         %qk = ten.reduce add %qk_prod dims [4] : tensor<1x4x8x8x16xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %q_pos = ten.iota dim 2 : tensor<1x4x8x8xi64>
// CHECK-NEXT:    %k_pos = ten.iota dim 3 : tensor<1x4x8x8xi64>
// CHECK-NEXT:    %scores = ten.map(%qk, %q_pos, %k_pos) : tensor<1x4x8x8xf32>, tensor<1x4x8x8xi64>, tensor<1x4x8x8xi64> -> tensor<1x4x8x8xf32> {
// CHECK-NEXT:    ^bb0(%[[S:.*]]: f32, %[[I:.*]]: i64, %[[J:.*]]: i64):
// CHECK-NEXT:      %[[VISIBLE:.*]] = arith.cmpi sle, %[[J]], %[[I]] : i64
// CHECK-NEXT:      %[[SCALE:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:      %[[SCALED:.*]] = arith.mulf %[[S]], %[[SCALE]] : f32
// CHECK-NEXT:      %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %[[MASKED:.*]] = arith.select %[[VISIBLE]], %[[SCALED]], %[[NEG_INF]] : f32
// CHECK-NEXT:      ten.yield %[[MASKED]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %max = ten.reduce max %scores dims [3] : tensor<1x4x8x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT:    %max_b = ten.index_map %max (d0, d1, d2, d3) -> (d0, d1, d2) : tensor<1x4x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %exp = ten.map(%scores, %max_b) : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> {
// CHECK:           arith.subf
// CHECK-NEXT:      math.exp
// CHECK:         %sum = ten.reduce add %exp dims [3] : tensor<1x4x8x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT:    %sum_b = ten.index_map %sum (d0, d1, d2, d3) -> (d0, d1, d2) : tensor<1x4x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %probs = ten.map(%exp, %sum_b) : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> {
// CHECK:           arith.divf
// CHECK:         %probs_b = ten.index_map %probs (d0, d1, d2, d3, d4) -> (d0, d1, d2, d3) : tensor<1x4x8x8xf32> -> tensor<1x4x8x8x16xf32>
// CHECK-NEXT:    %v_b = ten.index_map %v (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d3, d4) : tensor<1x2x8x16xf32> -> tensor<1x4x8x8x16xf32>
// CHECK-NEXT:    %pv_prod = ten.map(%probs_b, %v_b) : tensor<1x4x8x8x16xf32>, tensor<1x4x8x8x16xf32> -> tensor<1x4x8x8x16xf32> {
// CHECK:           arith.mulf
// CHECK:         %attn = ten.reduce add %pv_prod dims [3] : tensor<1x4x8x8x16xf32> -> tensor<1x4x8x16xf32>
// CHECK-NEXT:    func.return %attn : tensor<1x4x8x16xf32>

// The form transformers uses under torch.export: a boolean (B, 1, Sq, Sk) mask, K and V
// already repeated to every head, an explicit scale. True attends; a row with no key
// left gives 0 (torch's _safe_softmax) where its max is -inf.
func.func @bool_mask(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %mask: tensor<2x1x8x8xi1>) -> tensor<2x4x8x16xf32> {
  %attn = torch.aten "scaled_dot_product_attention.default"(query = %q, key = %k, value = %v, attn_mask = %mask) {scale = 2.500000e-01} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x8x8xi1>) -> tensor<2x4x8x16xf32>
  func.return %attn : tensor<2x4x8x16xf32>
}

// CHECK-LABEL: func.func @bool_mask
// CHECK:         %k_b = ten.index_map %k (d0, d1, d2, d3, d4) -> (d0, d1, d3, d4) : tensor<2x4x8x16xf32> -> tensor<2x4x8x8x16xf32>
// CHECK:         %qk = ten.reduce add %qk_prod dims [4] : tensor<2x4x8x8x16xf32> -> tensor<2x4x8x8xf32>
// CHECK-NEXT:    %mask_b = ten.index_map %mask (d0, d1, d2, d3) -> (d0, 0, d2, d3) : tensor<2x1x8x8xi1> -> tensor<2x4x8x8xi1>
// CHECK-NEXT:    %scores = ten.map(%qk, %mask_b) : tensor<2x4x8x8xf32>, tensor<2x4x8x8xi1> -> tensor<2x4x8x8xf32> {
// CHECK-NEXT:    ^bb0(%[[S:.*]]: f32, %[[KEEP:.*]]: i1):
// CHECK:           %[[SCALED:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK-NEXT:      %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %{{.*}} = arith.select %[[KEEP]], %[[SCALED]], %[[NEG_INF]] : f32
// CHECK:         %max = ten.reduce max %scores dims [3] : tensor<2x4x8x8xf32> -> tensor<2x4x8xf32>
// CHECK:         %sum = ten.reduce add %exp dims [3] : tensor<2x4x8x8xf32> -> tensor<2x4x8xf32>
// CHECK:         %probs = ten.map(%exp, %sum_b, %max_b) : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32> {
// CHECK-NEXT:    ^bb0(%[[E:.*]]: f32, %[[T:.*]]: f32, %[[M:.*]]: f32):
// CHECK-NEXT:      %[[P:.*]] = arith.divf %[[E]], %[[T]] : f32
// CHECK-NEXT:      %[[NEG_INF2:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %[[EMPTY:.*]] = arith.cmpf oeq, %[[M]], %[[NEG_INF2]] : f32
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %{{.*}} = arith.select %[[EMPTY]], %[[ZERO]], %[[P]] : f32
// CHECK:         %attn = ten.reduce add %pv_prod dims [3] : tensor<2x4x8x8x16xf32> -> tensor<2x4x8x16xf32>

// A float mask is added; bf16 is computed in f32 (scores, probabilities, both sums) and
// rounded once at the end. The default scale is 1/sqrt(8).
func.func @float_mask_bf16(%q: tensor<1x2x4x8xbf16>, %k: tensor<1x2x6x8xbf16>, %v: tensor<1x2x6x8xbf16>, %bias: tensor<4x6xbf16>) -> tensor<1x2x4x8xbf16> {
  %attn = torch.aten "scaled_dot_product_attention.default"(query = %q, key = %k, value = %v, attn_mask = %bias) : (tensor<1x2x4x8xbf16>, tensor<1x2x6x8xbf16>, tensor<1x2x6x8xbf16>, tensor<4x6xbf16>) -> tensor<1x2x4x8xbf16>
  func.return %attn : tensor<1x2x4x8xbf16>
}

// CHECK-LABEL: func.func @float_mask_bf16
// CHECK:         %qk = ten.reduce add %qk_prod dims [4] : tensor<1x2x4x6x8xf32> -> tensor<1x2x4x6xf32>
// CHECK-NEXT:    %bias_b = ten.index_map %bias (d0, d1, d2, d3) -> (d2, d3) : tensor<4x6xbf16> -> tensor<1x2x4x6xbf16>
// CHECK-NEXT:    %scores = ten.map(%qk, %bias_b) : tensor<1x2x4x6xf32>, tensor<1x2x4x6xbf16> -> tensor<1x2x4x6xf32> {
// CHECK:           arith.constant 0.353553385 : f32
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT:      arith.addf
// CHECK:         %attn_t = ten.reduce add %pv_prod dims [3] : tensor<1x2x4x6x8xf32> -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %attn = ten.map(%attn_t) : tensor<1x2x4x8xf32> -> tensor<1x2x4x8xbf16> {
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
