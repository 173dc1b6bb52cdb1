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

// ignore_index: the rank's sum over its labels divided by the count of labels not ignored
// over all ranks (ranks=1 here: nothing to sum over).
// CHECK-LABEL: func.func @forward(
// CHECK: %[[L:.*]], %{{.*}} = graph.softmax_cross_entropy_loss %{{.*}}, %[[Y:[a-z0-9]+]] {ignore_index = -100 : i64, reduction = "sum"}
// CHECK: %[[IGN:.*]] = graph.constant dense<-100> : tensor<i64>
// CHECK: %[[EQ:.*]] = graph.equal %[[Y]], %[[IGN]]
// CHECK: %[[KEEP:.*]] = graph.not %[[EQ]]
// CHECK: %[[ONES:.*]] = graph.cast %[[KEEP]] {to = f32}
// CHECK: %[[N:.*]] = graph.reduce_sum %[[ONES]] {axes = array<i64: 0>, keepdims = false}
// CHECK: %[[S:.*]] = graph.div %[[L]], %[[N]]
// CHECK: return %[[S]]
func.func @forward(%z: tensor<2x5xf32> {graph.input = "z"}, %y: tensor<2xi64> {graph.input = "y"}) -> (tensor<f32> {graph.output = "loss"}) {
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x5xf32>)
  return %l : tensor<f32>
}

// -----

// Class weights make the denominator a weight sum: not supported.
func.func @forward(%z: tensor<2x5xf32> {graph.input = "z"}, %y: tensor<2xi64> {graph.input = "y"}, %w: tensor<5xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  // expected-error @+1 {{a mean loss with class weights divides by a weight sum that depends on every rank's labels}}
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y, %w {reduction = "mean"} : (tensor<2x5xf32>, tensor<2xi64>, tensor<5xf32>) -> (tensor<f32>, tensor<2x5xf32>)
  return %l : tensor<f32>
}

// -----

// On several ranks the count is summed over the mesh, created here.
// RUN: shardc-opt %s -split-input-file --shardc-scale-loss="local-rows=1 global-rows=2 ranks=2" -verify-diagnostics | FileCheck %s --check-prefix=MESH
// MESH: mesh.mesh @dp(shape = 2)
// MESH: %[[N:.*]] = graph.reduce_sum
// MESH: %[[G:.*]] = mesh.all_reduce %[[N]] on @dp mesh_axes = [0] : tensor<f32> -> tensor<f32>
// MESH: graph.div %{{.*}}, %[[G]]
func.func @forward(%z: tensor<2x5xf32> {graph.input = "z"}, %y: tensor<2xi64> {graph.input = "y"}) -> (tensor<f32> {graph.output = "loss"}) {
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x5xf32>)
  return %l : tensor<f32>
}
