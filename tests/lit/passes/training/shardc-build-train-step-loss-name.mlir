// RUN: shardc-opt %s --shardc-build-train-step | FileCheck %s

// The model calls its loss output "objective"; the training step names it "loss", the name
// the runtime's training loop reads it by (keeping the model's name made such a model compile
// and then fail in shardrun with "training program has no output 'loss'").
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<4xf32> {graph.param = "w"}
// CHECK-NOT: objective
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}, %w: tensor<4xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "objective"}) {
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
