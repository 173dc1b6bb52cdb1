// RUN: shardc-opt %s --shardc-build-train-step | FileCheck %s

// A weight read through an f32 -> bf16 -> f32 round trip (what shardc-bf16-matmuls writes):
// the gradient flows back through both casts, each casting it to its input's type, so the
// optimizer receives the weight's gradient rounded to bf16 and widened back to f32, as
// PyTorch's autograd of .to(torch.bfloat16) gives.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[DWR:.*]] = graph.matmul %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[DWH:.*]] = graph.cast %[[DWR]] {to = bf16} : (tensor<3x5xf32>) -> tensor<3x5xbf16>
// CHECK-NEXT: %[[DW:.*]] = graph.cast %[[DWH]] {to = f32} : (tensor<3x5xbf16>) -> tensor<3x5xf32>
// CHECK-NEXT: graph.adamw_update %arg1, %[[DW]],
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %w: tensor<3x5xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %wh = graph.cast %w {to = bf16} : (tensor<3x5xf32>) -> tensor<3x5xbf16>
  %wr = graph.cast %wh {to = f32} : (tensor<3x5xbf16>) -> tensor<3x5xf32>
  %y = graph.matmul %x, %wr : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
