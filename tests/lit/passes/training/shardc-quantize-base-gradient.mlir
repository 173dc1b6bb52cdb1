// RUN: shardc-opt %s --shardc-quantize-base="format=int8" --shardc-build-train-step | FileCheck %s --check-prefix=GRAD

// The input's gradient is the same product untransposed (dy · W); the frozen weight gets none.
// GRAD-LABEL: func.func @train_step
// GRAD: %[[H:.*]] = graph.quantized_matmul %{{.*}}, %arg2, %arg3 {cols = 128 : i64, format = "int8", rows = 64 : i64} : (tensor<4x128xf32>, tensor<64x128xi8>, tensor<64xf32>) -> tensor<4x64xf32>
// GRAD: graph.quantized_matmul %{{.*}}, %arg2, %arg3 {cols = 128 : i64, format = "int8", rows = 64 : i64, untransposed} : (tensor<4x64xf32>, tensor<64x128xi8>, tensor<64xf32>) -> tensor<4x128xf32>
// GRAD-NOT: graph.quantized_matmul
func.func @forward(%x: tensor<4x16xf32> {graph.input = "x"},
                   %v: tensor<16x128xf32> {graph.param = "proj.weight"},
                   %w: tensor<64x128xf32> {graph.not_trainable = "frozen", graph.param = "fc.weight"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %h0 = graph.matmul %x, %v : (tensor<4x16xf32>, tensor<16x128xf32>) -> tensor<4x128xf32>
  %t = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<64x128xf32>) -> tensor<128x64xf32>
  %h = graph.matmul %h0, %t : (tensor<4x128xf32>, tensor<128x64xf32>) -> tensor<4x64xf32>
  %l = graph.reduce_sum %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x64xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

