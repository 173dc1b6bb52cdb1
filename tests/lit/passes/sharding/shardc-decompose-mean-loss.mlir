// RUN: shardc-opt %s -split-input-file --shardc-decompose-mean-loss | FileCheck %s

// A plain mean: the sum over the count of all labels, a constant.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[SUM:.*]], %{{.*}} = graph.softmax_cross_entropy_loss %arg0, %arg1 {reduction = "sum"}
// CHECK: %[[N:.*]] = graph.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[MEAN:.*]] = graph.div %[[SUM]], %[[N]]
// CHECK: return %[[MEAN]]
func.func @forward(%s: tensor<4x5xf32> {graph.input = "s"}, %y: tensor<4xi64> {graph.input = "y"}) -> (tensor<f32> {graph.output = "loss"}) {
  %l, %lp = graph.softmax_cross_entropy_loss %s, %y {reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
  return %l : tensor<f32>
}

// -----

// With ignore_index: the labels not ignored are counted in the graph (a reduction over the
// batch, which the partitioner all-reduces).
// CHECK-LABEL: func.func @forward(
// CHECK: %[[SUM:.*]], %{{.*}} = graph.softmax_cross_entropy_loss %arg0, %arg1 {ignore_index = -100 : i64, reduction = "sum"}
// CHECK: %[[IGNORED:.*]] = graph.equal %arg1
// CHECK: %[[KEPT:.*]] = graph.not %[[IGNORED]]
// CHECK: %[[ONES:.*]] = graph.cast %[[KEPT]] {to = f32}
// CHECK: %[[N:.*]] = graph.reduce_sum %[[ONES]] {axes = array<i64: 0>, keepdims = false}
// CHECK: graph.div %[[SUM]], %[[N]]
func.func @forward(%s: tensor<4x5xf32> {graph.input = "s"}, %y: tensor<4xi64> {graph.input = "y"}) -> (tensor<f32> {graph.output = "loss"}) {
  %l, %lp = graph.softmax_cross_entropy_loss %s, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
  return %l : tensor<f32>
}

// -----

// With class weights the mean stays (its rule keeps the batch whole).
// CHECK-LABEL: func.func @forward(
// CHECK: graph.nll_loss %arg0, %arg1, %arg2 {reduction = "mean"}
// CHECK-NOT: graph.div
func.func @forward(%s: tensor<4x5xf32> {graph.input = "s"}, %y: tensor<4xi64> {graph.input = "y"}, %w: tensor<5xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %l = graph.nll_loss %s, %y, %w {reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
