// RUN: shardc-opt %s -split-input-file --shardc-quantize-base="format=nf4" | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-quantize-base="format=int8" | FileCheck %s --check-prefix=INT8
// RUN: shardc-opt %s -split-input-file --shardc-quantize-base="format=bf16 keep=lm_head|q_proj" | FileCheck %s --check-prefix=KEEP

// nn.Linear read through a transpose (W [out, in]) and a Gemm on a Conv1D-style weight
// ([in, out], stored transposed) with its bias: both become quantized products of W stored
// [out, in], the bias added after; lm_head (kept by default) and the trained weight stay f32,
// and the quantized weights' parameters are appended, frozen.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg1: tensor<64xf32> {graph.not_trainable = "frozen", graph.param = "mlp.c_fc.bias"}
// CHECK-SAME: %arg2: tensor<64x128xf32> {graph.not_trainable = "frozen", graph.param = "lm_head.weight"}
// CHECK-SAME: %arg3: tensor<64x128xf32> {graph.param = "trained.weight"}
// CHECK-SAME: %arg4: tensor<4096xui8> {graph.not_trainable = "frozen base, stored as nf4 (--base-dtype)", graph.param = "attn.q_proj.weight.nf4"}
// CHECK-SAME: %arg5: tensor<128xf32> {graph.not_trainable = "frozen base, stored as nf4 (--base-dtype)", graph.param = "attn.q_proj.weight.absmax"}
// CHECK-SAME: %arg6: tensor<4096xui8> {{.*}}graph.param = "mlp.c_fc.weight.nf4"}
// CHECK-SAME: %arg7: tensor<128xf32> {{.*}}graph.param = "mlp.c_fc.weight.absmax"}
// Each quantized weight under its model name and layout (for the export, dequantized):
// CHECK-SAME: attributes {graph.quantized_base = [{format = "nf4", weight = "attn.q_proj.weight", weight_in_by_out = false}, {format = "nf4", weight = "mlp.c_fc.weight", weight_in_by_out = true}]}
// CHECK-NEXT: %[[Q:.*]] = graph.quantized_matmul %arg0, %arg4, %arg5 {cols = 128 : i64, format = "nf4", rows = 64 : i64} : (tensor<2x4x128xf32>, tensor<4096xui8>, tensor<128xf32>) -> tensor<2x4x64xf32>
// CHECK-NEXT: %[[F:.*]] = graph.reshape %arg0
// CHECK-NEXT: %[[C:.*]] = graph.quantized_matmul %[[F]], %arg6, %arg7 {cols = 128 : i64, format = "nf4", rows = 64 : i64} : (tensor<8x128xf32>, tensor<4096xui8>, tensor<128xf32>) -> tensor<8x64xf32>
// CHECK-NEXT: %[[B:.*]] = graph.add %[[C]], %arg1
// CHECK-NEXT: graph.transpose %arg2
// CHECK-NEXT: graph.matmul
// CHECK-NEXT: graph.transpose %arg3
// CHECK-NEXT: graph.matmul
// CHECK-NEXT: return %[[Q]], %[[B]]

// int8: i8 codes [out, in] and one absmax per output row.
// INT8-LABEL: func.func @forward
// INT8-SAME: %arg4: tensor<64x128xi8> {{.*}}graph.param = "attn.q_proj.weight.int8"}
// INT8-SAME: %arg5: tensor<64xf32> {{.*}}graph.param = "attn.q_proj.weight.absmax"}
// INT8: graph.quantized_matmul %arg0, %arg4, %arg5 {cols = 128 : i64, format = "int8", rows = 64 : i64}

// bf16 has no scales; keep= leaves q_proj in f32 too.
// KEEP-LABEL: func.func @forward
// KEEP-SAME: graph.param = "attn.q_proj.weight"}
// KEEP-SAME: %arg5: tensor<64x128xbf16> {{.*}}graph.param = "mlp.c_fc.weight.bf16"})
// KEEP: graph.quantized_matmul %{{.*}}, %arg5 {cols = 128 : i64, format = "bf16", rows = 64 : i64} : (tensor<8x128xf32>, tensor<64x128xbf16>) -> tensor<8x64xf32>

func.func @forward(%x: tensor<2x4x128xf32> {graph.input = "x"},
                   %wq: tensor<64x128xf32> {graph.not_trainable = "frozen", graph.param = "attn.q_proj.weight"},
                   %wc: tensor<128x64xf32> {graph.not_trainable = "frozen", graph.param = "mlp.c_fc.weight"},
                   %bc: tensor<64xf32> {graph.not_trainable = "frozen", graph.param = "mlp.c_fc.bias"},
                   %wh: tensor<64x128xf32> {graph.not_trainable = "frozen", graph.param = "lm_head.weight"},
                   %wt: tensor<64x128xf32> {graph.param = "trained.weight"})
    -> (tensor<2x4x64xf32> {graph.output = "q"}, tensor<8x64xf32> {graph.output = "c"}, tensor<2x4x64xf32> {graph.output = "h"}, tensor<2x4x64xf32> {graph.output = "t"}) {
  %t = graph.transpose %wq {perm = array<i64: 1, 0>} : (tensor<64x128xf32>) -> tensor<128x64xf32>
  %q = graph.matmul %x, %t : (tensor<2x4x128xf32>, tensor<128x64xf32>) -> tensor<2x4x64xf32>
  %flat = graph.reshape %x : (tensor<2x4x128xf32>) -> tensor<8x128xf32>
  %c = graph.gemm %flat, %wc, %bc {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<8x128xf32>, tensor<128x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %th = graph.transpose %wh {perm = array<i64: 1, 0>} : (tensor<64x128xf32>) -> tensor<128x64xf32>
  %h = graph.matmul %x, %th : (tensor<2x4x128xf32>, tensor<128x64xf32>) -> tensor<2x4x64xf32>
  %tt = graph.transpose %wt {perm = array<i64: 1, 0>} : (tensor<64x128xf32>) -> tensor<128x64xf32>
  %tr = graph.matmul %x, %tt : (tensor<2x4x128xf32>, tensor<128x64xf32>) -> tensor<2x4x64xf32>
  return %q, %c, %h, %tr : tensor<2x4x64xf32>, tensor<8x64xf32>, tensor<2x4x64xf32>, tensor<2x4x64xf32>
}

