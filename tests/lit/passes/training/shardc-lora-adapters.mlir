// RUN: shardc-opt %s -split-input-file --shardc-lora-adapters="r=2 alpha=4 targets=q_proj|c_attn" | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-lora-adapters="r=2 alpha=4 rslora=true targets=q_proj|c_attn" | FileCheck %s --check-prefix=RS
// RUN: shardc-opt %s -split-input-file --shardc-lora-adapters="r=2 alpha=4 targets=q_proj|c_attn train-bias=true" | FileCheck %s --check-prefix=BIAS
// RUN: shardc-opt %s -split-input-file --shardc-lora-adapters="r=2 alpha=4 dropout=0.25 targets=q_proj|c_attn" | FileCheck %s --check-prefix=DROP
// RUN: not shardc-opt %s -split-input-file --shardc-lora-adapters="targets=nothing_here" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not shardc-opt %s -split-input-file --shardc-lora-adapters="r=7 targets=q_proj" 2>&1 | FileCheck %s --check-prefix=RANK

// nn.Linear on a 3-D input (the weight [out, in] read through a transpose): the adapter's
// product follows the base product, scaled by alpha / r = 2, and replaces its result; the
// targeted weight, the untargeted one and the bias are frozen, the adapters appended.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg1: tensor<6x8xf32> {graph.not_trainable = "frozen base of the LoRA adapters (--lora)", graph.param = "attn.q_proj.weight"}
// CHECK-SAME: %arg2: tensor<6xf32> {graph.not_trainable = "frozen base of the LoRA adapters (--lora)", graph.param = "attn.q_proj.bias"}
// CHECK-SAME: %arg3: tensor<6x8xf32> {graph.not_trainable = "frozen base of the LoRA adapters (--lora)", graph.param = "attn.k_proj.weight"}
// CHECK-SAME: %arg4: tensor<2x8xf32> {graph.param = "attn.q_proj.lora_A.weight"}
// CHECK-SAME: %arg5: tensor<6x2xf32> {graph.param = "attn.q_proj.lora_B.weight"}
// What merging the adapters into the weight needs (an [out, in] weight here):
// CHECK-SAME: attributes {graph.lora_merges = [{lora_A = "attn.q_proj.lora_A.weight", lora_B = "attn.q_proj.lora_B.weight", scale = 2.000000e+00 : f64, weight = "attn.q_proj.weight", weight_in_by_out = false}]}
// CHECK: %[[WT:.*]] = graph.transpose %arg1
// CHECK-NEXT: %[[Y:.*]] = graph.matmul %arg0, %[[WT]] : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT: %[[AT:.*]] = graph.transpose %arg4 {perm = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
// CHECK-NEXT: %[[D:.*]] = graph.matmul %arg0, %[[AT]] : (tensor<2x4x8xf32>, tensor<8x2xf32>) -> tensor<2x4x2xf32>
// CHECK-NEXT: %[[BT:.*]] = graph.transpose %arg5 {perm = array<i64: 1, 0>} : (tensor<6x2xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[U:.*]] = graph.matmul %[[D]], %[[BT]] : (tensor<2x4x2xf32>, tensor<2x6xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT: %[[S:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[M:.*]] = graph.mul %[[U]], %[[S]]
// CHECK-NEXT: %[[Z:.*]] = graph.add %[[Y]], %[[M]]
// CHECK-NEXT: graph.add %[[Z]], %arg2
// The untargeted product is left alone.
// CHECK: graph.matmul %{{.*}}, %arg3 : (tensor<2x4x6xf32>, tensor<6x8xf32>)
// CHECK-NOT: lora
// RS: graph.constant dense<2.82842708> : tensor<f32>
// BIAS: %arg2: tensor<6xf32> {graph.param = "attn.q_proj.bias"}
// With dropout, the adapter reads its input through a training-mode dropout of its own stream.
// DROP: %[[XD:.*]], %{{.*}} = graph.dropout %arg0 {ratio = 2.500000e-01 : f32, training}
// DROP-NEXT: %[[AT:.*]] = graph.transpose %arg4
// DROP-NEXT: graph.matmul %[[XD]], %[[AT]]
// NONE: error: --lora targets=nothing_here: no MatMul or Gemm weight's module matches (modules with product weights: attn.q_proj, attn.k_proj)
// RANK: error: --lora r=7: larger than weight 'attn.q_proj.weight' [8 in x 6 out] allows
func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"},
                   %w: tensor<6x8xf32> {graph.param = "attn.q_proj.weight"},
                   %bias: tensor<6xf32> {graph.param = "attn.q_proj.bias"},
                   %k: tensor<6x8xf32> {graph.param = "attn.k_proj.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %y = graph.matmul %x, %wt : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %yb = graph.add %y, %bias : (tensor<2x4x6xf32>, tensor<6xf32>) -> tensor<2x4x6xf32>
  %o = graph.matmul %yb, %k : (tensor<2x4x6xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32>
  %l = graph.reduce_sum %o {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// GPT-2's Conv1D as a Gemm on W [in, out] with its bias: the adapter's input is the Gemm's a,
// its sum follows the whole Gemm (bias included), as PEFT adds it to the layer's output.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg3: tensor<2x8xf32> {graph.param = "h.0.attn.c_attn.lora_A.weight"}
// CHECK-SAME: %arg4: tensor<12x2xf32> {graph.param = "h.0.attn.c_attn.lora_B.weight"}
// CHECK-SAME: graph.lora_merges = [{{.*}}weight = "h.0.attn.c_attn.weight", weight_in_by_out = true}]
// CHECK: %[[G:.*]] = graph.gemm %arg0, %arg1, %arg2
// CHECK: %[[D:.*]] = graph.matmul %arg0, %{{.*}} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
// CHECK: %[[U:.*]] = graph.matmul %[[D]], %{{.*}} : (tensor<4x2xf32>, tensor<2x12xf32>) -> tensor<4x12xf32>
// CHECK: %[[M:.*]] = graph.mul %[[U]]
// CHECK-NEXT: %[[Z:.*]] = graph.add %[[G]], %[[M]]
// CHECK-NEXT: graph.reduce_sum %[[Z]]
func.func @forward(%x: tensor<4x8xf32> {graph.input = "x"},
                   %w: tensor<8x12xf32> {graph.param = "h.0.attn.c_attn.weight"},
                   %b: tensor<12xf32> {graph.param = "h.0.attn.c_attn.bias"}) -> (tensor<f32> {graph.output = "loss"}) {
  %y = graph.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<4x8xf32>, tensor<8x12xf32>, tensor<12xf32>) -> tensor<4x12xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x12xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
