// RUN: shardc-opt %s -split-input-file --shardc-plan-memory | FileCheck %s

// A training step: the optimizer update runs after the loss and is the last reader of the
// parameter and its moments, and adamw_update updates those operands in place. Each new value
// takes its input's bytes (the update's offsets are the arguments'), and its result carries
// shardc.in_place. The step count is updated before the loss, so it is copied out as before.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %arg1: tensor<4xf32> {graph.param = "w", shardc.offset = [[W:[0-9]+]] : i64}
// CHECK-SAME: %arg2: tensor<4xf32> {graph.state = "w.exp_avg", shardc.offset = [[M:[0-9]+]] : i64}
// CHECK-SAME: %arg3: tensor<4xf32> {graph.state = "w.exp_avg_sq", shardc.offset = [[V:[0-9]+]] : i64}
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<4xf32> {graph.param = "w", shardc.in_place}, tensor<4xf32> {graph.state = "w.exp_avg", shardc.in_place}, tensor<4xf32> {graph.state = "w.exp_avg_sq", shardc.in_place}, tensor<i64> {graph.step})
// CHECK: graph.adamw_update %arg1, %arg0, %arg2, %arg3
// CHECK-SAME: shardc.offsets = array<i64: [[W]], [[M]], [[V]]>
func.func @train_step(%x: tensor<4xf32> {graph.input = "x"}, %w: tensor<4xf32> {graph.param = "w"}, %m: tensor<4xf32> {graph.state = "w.exp_avg"}, %v: tensor<4xf32> {graph.state = "w.exp_avg_sq"}, %step: tensor<i64> {graph.step}, %lr: tensor<f32> {graph.lr}) -> (tensor<f32> {graph.output = "loss"}, tensor<4xf32> {graph.param = "w"}, tensor<4xf32> {graph.state = "w.exp_avg"}, tensor<4xf32> {graph.state = "w.exp_avg_sq"}, tensor<i64> {graph.step}) {
  %one = graph.constant dense<1> : tensor<i64>
  %next = graph.add %step, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %loss = graph.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %p:3 = graph.adamw_update %w, %x, %m, %v, %next, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %loss, %p#0, %p#1, %p#2, %next : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>
}

// -----

// The old parameter is read after the update: its new value needs bytes of its own (no
// shardc.in_place on "w", and the update's first offset is not the argument's); the moments,
// read by nothing later, still take their inputs' bytes.
// CHECK-LABEL: func.func @read_after_update
// CHECK-SAME: %arg1: tensor<4xf32> {graph.param = "w", shardc.offset = [[W:[0-9]+]] : i64}
// CHECK-SAME: %arg2: tensor<4xf32> {graph.state = "w.exp_avg", shardc.offset = [[M:[0-9]+]] : i64}
// CHECK-SAME: %arg3: tensor<4xf32> {graph.state = "w.exp_avg_sq", shardc.offset = [[V:[0-9]+]] : i64}
// CHECK-SAME: tensor<4xf32> {graph.param = "w"}, tensor<4xf32> {graph.state = "w.exp_avg", shardc.in_place}, tensor<4xf32> {graph.state = "w.exp_avg_sq", shardc.in_place}, tensor<4xf32> {graph.output = "late"})
// CHECK: graph.adamw_update
// CHECK-NOT: shardc.offsets = array<i64: [[W]],
// CHECK-SAME: shardc.offsets = array<i64: {{[0-9]+}}, [[M]], [[V]]>
func.func @read_after_update(%x: tensor<4xf32> {graph.input = "x"}, %w: tensor<4xf32> {graph.param = "w"}, %m: tensor<4xf32> {graph.state = "w.exp_avg"}, %v: tensor<4xf32> {graph.state = "w.exp_avg_sq"}, %step: tensor<i64> {graph.step}, %lr: tensor<f32> {graph.lr}) -> (tensor<f32> {graph.output = "loss"}, tensor<4xf32> {graph.param = "w"}, tensor<4xf32> {graph.state = "w.exp_avg"}, tensor<4xf32> {graph.state = "w.exp_avg_sq"}, tensor<4xf32> {graph.output = "late"}) {
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %loss = graph.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %p:3 = graph.adamw_update %w, %x, %m, %v, %step, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %late = graph.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %loss, %p#0, %p#1, %p#2, %late : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The loss is computed after the update (as before hoist-loss): nothing is updated in place,
// so a runtime stopping at a non-finite loss would find the state already changed.
// CHECK-LABEL: func.func @loss_after_update
// CHECK-NOT: shardc.in_place
// CHECK: return
func.func @loss_after_update(%x: tensor<4xf32> {graph.input = "x"}, %w: tensor<4xf32> {graph.param = "w"}, %m: tensor<4xf32> {graph.state = "w.exp_avg"}, %v: tensor<4xf32> {graph.state = "w.exp_avg_sq"}, %step: tensor<i64> {graph.step}, %lr: tensor<f32> {graph.lr}) -> (tensor<f32> {graph.output = "loss"}, tensor<4xf32> {graph.param = "w"}, tensor<4xf32> {graph.state = "w.exp_avg"}, tensor<4xf32> {graph.state = "w.exp_avg_sq"}) {
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %p:3 = graph.adamw_update %w, %x, %m, %v, %step, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %loss = graph.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %loss, %p#0, %p#1, %p#2 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
