// RUN: shardc-opt %s -split-input-file --shardc-scale-loss="local-rows=2 global-rows=5" -verify-diagnostics | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-scale-loss="local-rows=5 global-rows=5" -verify-diagnostics | FileCheck %s --check-prefix=EVEN

// A rank with 2 of the 5 rows weighs its mean loss by 2/5; the ranks' losses then sum to the
// global batch's mean.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[L:.*]], %{{.*}} = graph.softmax_cross_entropy_loss
// CHECK: %[[C:.*]] = graph.constant dense<4.000000e-01> : tensor<f32>
// CHECK: %[[S:.*]] = graph.mul %[[L]], %[[C]]
// CHECK: return %[[S]]
// The whole batch on one rank: nothing to scale.
// EVEN-LABEL: func.func @forward(
// EVEN-NOT: graph.mul
// EVEN: return
func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %y: tensor<2xi64> {graph.input = "y"},
                   %w1: tensor<4x3xf32> {graph.param = "fc1.weight"}, %b1: tensor<3xf32> {graph.param = "fc1.bias"},
                   %w2: tensor<3x5xf32> {graph.param = "fc2.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %hb = graph.add %h, %b1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = graph.relu %hb : tensor<2x3xf32>
  %z = graph.matmul %r, %w2 : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "mean"} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x5xf32>)
  return %l : tensor<f32>
}

// -----

// A mean over the labels that are not ignored divides by a count only the whole batch knows.
func.func @forward(%z: tensor<2x5xf32> {graph.input = "z"}, %y: tensor<2xi64> {graph.input = "y"}) -> (tensor<f32> {graph.output = "loss"}) {
  // expected-error @+1 {{a mean loss with ignore_index or class weights divides by a count that depends on every rank's labels}}
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x5xf32>)
  return %l : tensor<f32>
}
