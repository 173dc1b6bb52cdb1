// RUN: shardc-opt %s -split-input-file --shardc-hoist-loss | FileCheck %s

// The loss (the result named "loss") is averaged at the end, after the update, as the
// partitioner leaves a data-parallel step: its producers move up to just after their operands,
// before the update. Nothing else moves.
// CHECK-LABEL: func.func @late_loss
// CHECK: %[[Y:.*]] = graph.mul %arg0, %arg1
// CHECK-NEXT: %[[SUM:.*]] = graph.reduce_sum %[[Y]]
// CHECK-NEXT: %[[AVG:.*]] = graph.mul %[[SUM]], %arg4
// CHECK-NEXT: graph.adamw_update
// CHECK-NEXT: return %[[AVG]]
func.func @late_loss(%x: tensor<4xf32> {graph.input = "x"}, %w: tensor<4xf32> {graph.param = "w"}, %m: tensor<4xf32> {graph.state = "w.exp_avg"}, %v: tensor<4xf32> {graph.state = "w.exp_avg_sq"}, %scale: tensor<f32> {graph.input = "scale"}, %step: tensor<i64> {graph.step}, %lr: tensor<f32> {graph.lr}) -> (tensor<f32> {graph.output = "loss"}, tensor<4xf32> {graph.param = "w"}, tensor<4xf32> {graph.state = "w.exp_avg"}, tensor<4xf32> {graph.state = "w.exp_avg_sq"}) {
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %p:3 = graph.adamw_update %w, %x, %m, %v, %step, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %sum = graph.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %avg = graph.mul %sum, %scale : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %avg, %p#0, %p#1, %p#2 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Without a "loss" result (a forward program) the order is left alone.
// CHECK-LABEL: func.func @forward
// CHECK: graph.exp
// CHECK-NEXT: graph.neg
// CHECK-NEXT: graph.tanh
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}, tensor<4xf32> {graph.output = "z"}) {
  %a = graph.exp %x : tensor<4xf32>
  %b = graph.neg %x : tensor<4xf32>
  %c = graph.tanh %a : tensor<4xf32>
  return %b, %c : tensor<4xf32>, tensor<4xf32>
}
