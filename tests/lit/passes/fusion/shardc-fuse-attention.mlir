// RUN: shardc-opt %s -split-input-file --shardc-fuse-attention | FileCheck %s

// GPT-2 as torch exports it: Kᵀ by a transpose of the projected keys, a scale by Mul, the
// causal mask by masked_fill (Where with -inf), softmax, the product with V. One attention op
// remains; the mask becomes Where(cond, -inf, 0) of the condition's shape, and K one transpose
// of the keys (the two permutations composed: 0,2,3,1 then the last two swapped = 0,2,1,3).
// CHECK-LABEL: func.func @gpt
// CHECK-SAME: (%[[Q:.*]]: tensor<2x2x16x8xf32> {{.*}}, %[[K4:.*]]: tensor<2x16x2x8xf32> {{.*}}, %[[V:.*]]: tensor<2x2x16x8xf32> {{.*}}, %[[COND:.*]]: tensor<1x1x16x16xi1>
// CHECK-DAG: %[[NINF:.*]] = graph.constant dense<0xFF800000> : tensor<f32>
// CHECK-DAG: %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[MASK:.*]] = graph.where %[[COND]], %[[NINF]], %[[ZERO]] : (tensor<1x1x16x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x16x16xf32>
// CHECK: %[[K:.*]] = graph.transpose %[[K4]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
// CHECK: %[[O:.*]], %{{.*}} = graph.attention %[[Q]], %[[K]], %[[V]], %[[MASK]] {causal = false, scale = 2.500000e-01 : f32} : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<1x1x16x16xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16xf32>)
// CHECK: return %[[O]]
// CHECK-NOT: graph.softmax
// CHECK-NOT: graph.matmul
func.func @gpt(%q: tensor<2x2x16x8xf32> {graph.input = "q"}, %k4: tensor<2x16x2x8xf32> {graph.input = "k"}, %v: tensor<2x2x16x8xf32> {graph.input = "v"}, %cond: tensor<1x1x16x16xi1> {graph.input = "c"}) -> (tensor<2x2x16x8xf32> {graph.output = "y"}) {
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x8x16xf32>
  %s = graph.matmul %q, %kt : (tensor<2x2x16x8xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x16x16xf32>
  %c = graph.constant dense<2.500000e-01> : tensor<f32>
  %t = graph.mul %s, %c : (tensor<2x2x16x16xf32>, tensor<f32>) -> tensor<2x2x16x16xf32>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %m = graph.where %cond, %ninf, %t : (tensor<1x1x16x16xi1>, tensor<f32>, tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x2x16x16xf32>
  %o = graph.matmul %p, %v : (tensor<2x2x16x16xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %o : tensor<2x2x16x8xf32>
}

// -----

// BERT / Hugging Face: a Div by sqrt(d) and an additive padding mask [B, 1, 1, Sk]; Kᵀ given
// directly (a transpose is made). Div by 4 is scale 0.25; the mask is passed as it is.
// CHECK-LABEL: func.func @bert
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32> {{.*}}, %[[KT:.*]]: tensor<2x4x16x8xf32> {{.*}}, %[[V:.*]]: tensor<2x4x8x16xf32> {{.*}}, %[[PAD:.*]]: tensor<2x1x1x8xf32>
// CHECK: %[[K:.*]] = graph.transpose %[[KT]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: graph.attention %[[Q]], %[[K]], %[[V]], %[[PAD]] {causal = false, scale = 2.500000e-01 : f32}
// CHECK-NOT: graph.softmax
func.func @bert(%q: tensor<2x4x8x16xf32> {graph.input = "q"}, %kt: tensor<2x4x16x8xf32> {graph.input = "kt"}, %v: tensor<2x4x8x16xf32> {graph.input = "v"}, %pad: tensor<2x1x1x8xf32> {graph.input = "mask"}) -> (tensor<2x4x8x16xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %c = graph.constant dense<4.000000e+00> : tensor<f32>
  %t = graph.div %s, %c : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %m = graph.add %t, %pad : (tensor<2x4x8x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x4x8x8xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %o = graph.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Not fused: the probabilities are read twice (returned as well), a dropout-like second
// reader would be the same; the chain stays as it is.
// CHECK-LABEL: func.func @probs_returned
// CHECK: graph.softmax
// CHECK: graph.matmul
// CHECK-NOT: graph.attention
func.func @probs_returned(%q: tensor<4x8xf32> {graph.input = "q"}, %kt: tensor<8x4xf32> {graph.input = "kt"}, %v: tensor<4x8xf32> {graph.input = "v"}) -> (tensor<4x8xf32> {graph.output = "y"}, tensor<4x4xf32> {graph.output = "p"}) {
  %s = graph.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %p = graph.softmax %s {axis = 1 : i64} : tensor<4x4xf32>
  %o = graph.matmul %p, %v : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o, %p : tensor<4x8xf32>, tensor<4x4xf32>
}

// -----

// Not fused: an additive mask before the scale (the fused op would have to scale the mask),
// and a mask computed from a trained parameter (T5's position bias: it needs a gradient).
// CHECK-LABEL: func.func @mask_then_scale
// CHECK-NOT: graph.attention
// CHECK-LABEL: func.func @trained_bias
// CHECK-NOT: graph.attention
func.func @mask_then_scale(%q: tensor<4x8xf32> {graph.input = "q"}, %kt: tensor<8x4xf32> {graph.input = "kt"}, %v: tensor<4x8xf32> {graph.input = "v"}, %mask: tensor<4x4xf32> {graph.input = "mask"}) -> (tensor<4x8xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %a = graph.add %s, %mask : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = graph.constant dense<5.000000e-01> : tensor<f32>
  %t = graph.mul %a, %c : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %p = graph.softmax %t {axis = 1 : i64} : tensor<4x4xf32>
  %o = graph.matmul %p, %v : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}
func.func @trained_bias(%q: tensor<4x8xf32> {graph.input = "q"}, %kt: tensor<8x4xf32> {graph.input = "kt"}, %v: tensor<4x8xf32> {graph.input = "v"}, %bias: tensor<4x4xf32> {graph.param = "rel_bias"}) -> (tensor<4x8xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %a = graph.add %s, %bias : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = graph.softmax %a {axis = 1 : i64} : tensor<4x4xf32>
  %o = graph.matmul %p, %v : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// Causal masks become the causal flag. Hugging Face GPT-2: a boolean constant (true: visible)
// and Where(cond, scores, finfo.min) after the scale. No mask operand, no where left.
// CHECK-LABEL: func.func @hf_gpt2_causal
// CHECK-NOT: graph.where
// CHECK: graph.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^, ]*}} {causal = true, scale = 5.000000e-01 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) ->
// CHECK-NOT: graph.where
func.func @hf_gpt2_causal(%q: tensor<1x2x4x4xf32> {graph.input = "q"}, %kt: tensor<1x2x4x4xf32> {graph.input = "kt"}, %v: tensor<1x2x4x4xf32> {graph.input = "v"}) -> (tensor<1x2x4x4xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = graph.constant dense<2.000000e+00> : tensor<f32>
  %t = graph.div %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %cond = graph.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %min = graph.constant dense<-3.40282347E+38> : tensor<f32>
  %m = graph.where %cond, %t, %min : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %o : tensor<1x2x4x4xf32>
}

// -----

// Hugging Face Llama: an additive constant [B, 1, S, Sk] of 0 and finfo.min, every batch's
// slice the causal rule; and the same mask computed from a boolean constant by a Where (the
// compiler evaluates it; the Where then goes, read by nothing).
// CHECK-LABEL: func.func @hf_llama_causal
// CHECK: graph.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^, ]*}} {causal = true, scale = 1.000000e+00 : f32}
// CHECK-NOT: graph.add
// CHECK-LABEL: func.func @computed_causal
// CHECK-NOT: graph.where
// CHECK: graph.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^, ]*}} {causal = true, scale = 1.000000e+00 : f32}
// CHECK-NOT: graph.where
func.func @hf_llama_causal(%q: tensor<2x1x3x4xf32> {graph.input = "q"}, %kt: tensor<2x1x4x3xf32> {graph.input = "kt"}, %v: tensor<2x1x3x4xf32> {graph.input = "v"}) -> (tensor<2x1x3x4xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<2x1x3x4xf32>, tensor<2x1x4x3xf32>) -> tensor<2x1x3x3xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]], [[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]]]> : tensor<2x1x3x3xf32>
  %m = graph.add %s, %mask : (tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<2x1x3x3xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x1x3x3xf32>
  %o = graph.matmul %p, %v : (tensor<2x1x3x3xf32>, tensor<2x1x3x4xf32>) -> tensor<2x1x3x4xf32>
  return %o : tensor<2x1x3x4xf32>
}
func.func @computed_causal(%q: tensor<3x4xf32> {graph.input = "q"}, %kt: tensor<4x3xf32> {graph.input = "kt"}, %v: tensor<3x4xf32> {graph.input = "v"}) -> (tensor<3x4xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
  %hidden = graph.constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %mask = graph.where %hidden, %ninf, %zero : (tensor<3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<3x3xf32>
  %m = graph.add %s, %mask : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %p = graph.softmax %m {axis = 1 : i64} : tensor<3x3xf32>
  %o = graph.matmul %p, %v : (tensor<3x3xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %o : tensor<3x4xf32>
}

// -----

// Beside a padding mask: a -inf causal mask becomes the flag and the padding mask stays; a
// finite (finfo.min) one stays a mask too, summed with the padding mask (summed, a whole row
// could be hidden, which the unfused softmax makes uniform over every key).
// CHECK-LABEL: func.func @causal_and_padding
// CHECK-SAME: %[[PAD:[^:]*]]: tensor<2x1x1x4xf32>
// CHECK: graph.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[PAD]] {causal = true,
// CHECK-LABEL: func.func @finite_causal_and_padding
// CHECK: %[[SUM:.*]] = graph.add
// CHECK: graph.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[SUM]] {causal = false,
func.func @causal_and_padding(%q: tensor<2x1x4x4xf32> {graph.input = "q"}, %kt: tensor<2x1x4x4xf32> {graph.input = "kt"}, %v: tensor<2x1x4x4xf32> {graph.input = "v"}, %pad: tensor<2x1x1x4xf32> {graph.input = "pad"}) -> (tensor<2x1x4x4xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %a = graph.add %s, %pad : (tensor<2x1x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x1x4x4xf32>
  %hidden = graph.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %m = graph.where %hidden, %ninf, %a : (tensor<4x4xi1>, tensor<f32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x1x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}
func.func @finite_causal_and_padding(%q: tensor<2x1x4x4xf32> {graph.input = "q"}, %kt: tensor<2x1x4x4xf32> {graph.input = "kt"}, %v: tensor<2x1x4x4xf32> {graph.input = "v"}, %pad: tensor<2x1x1x4xf32> {graph.input = "pad"}) -> (tensor<2x1x4x4xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %a = graph.add %s, %pad : (tensor<2x1x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x1x4x4xf32>
  %mask = graph.constant dense<[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %m = graph.add %a, %mask : (tensor<2x1x4x4xf32>, tensor<4x4xf32>) -> tensor<2x1x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x1x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

// Fewer queries than keys: the causal rule is aligned to the last query (query i sees keys up
// to i + Sk - S), as the kernels apply it. A mask aligned to the first query instead (key j
// hidden when j > i) is not that rule and stays a mask; so does a mask that hides the diagonal.
// CHECK-LABEL: func.func @bottom_right
// CHECK: graph.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^, ]*}} {causal = true,
// CHECK-LABEL: func.func @top_left
// CHECK: graph.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^ ]*}} {causal = false,
// CHECK-LABEL: func.func @diagonal_hidden
// CHECK: graph.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^ ]*}} {causal = false,
func.func @bottom_right(%q: tensor<2x4xf32> {graph.input = "q"}, %kt: tensor<4x3xf32> {graph.input = "kt"}, %v: tensor<3x4xf32> {graph.input = "v"}) -> (tensor<2x4xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %mask = graph.constant dense<[[0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>
  %m = graph.add %s, %mask : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = graph.softmax %m {axis = 1 : i64} : tensor<2x3xf32>
  %o = graph.matmul %p, %v : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %o : tensor<2x4xf32>
}
func.func @top_left(%q: tensor<2x4xf32> {graph.input = "q"}, %kt: tensor<4x3xf32> {graph.input = "kt"}, %v: tensor<3x4xf32> {graph.input = "v"}) -> (tensor<2x4xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %mask = graph.constant dense<[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000]]> : tensor<2x3xf32>
  %m = graph.add %s, %mask : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = graph.softmax %m {axis = 1 : i64} : tensor<2x3xf32>
  %o = graph.matmul %p, %v : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %o : tensor<2x4xf32>
}
func.func @diagonal_hidden(%q: tensor<3x4xf32> {graph.input = "q"}, %kt: tensor<4x3xf32> {graph.input = "kt"}, %v: tensor<3x4xf32> {graph.input = "v"}) -> (tensor<3x4xf32> {graph.output = "y"}) {
  %s = graph.matmul %q, %kt : (tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
  %mask = graph.constant dense<[[0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000]]> : tensor<3x3xf32>
  %m = graph.add %s, %mask : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %p = graph.softmax %m {axis = 1 : i64} : tensor<3x3xf32>
  %o = graph.matmul %p, %v : (tensor<3x3xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %o : tensor<3x4xf32>
}
