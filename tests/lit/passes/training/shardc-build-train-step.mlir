// RUN: shardc-opt %s -split-input-file --shardc-build-train-step -verify-diagnostics | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-build-train-step="optimizer=sgd momentum=0.9 nesterov=true grad-clip=1.0 freeze=b" -verify-diagnostics | FileCheck %s --check-prefix=SGD

// A linear layer + relu + masked cross-entropy. The mask buffer only feeds a comparison, so
// the loss does not depend on it through gradients: it is not trained. The logits output is
// dropped from the step.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32> {graph.input = "x"}
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x5xf32> {graph.param = "w"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<5xf32> {graph.param = "b"}
// CHECK-SAME: {graph.param = "mask"}
// CHECK-SAME: %[[WM:[a-z0-9]+]]: tensor<3x5xf32> {graph.state = "w.exp_avg"}
// CHECK-SAME: %[[WV:[a-z0-9]+]]: tensor<3x5xf32> {graph.state = "w.exp_avg_sq"}
// CHECK-SAME: {graph.state = "b.exp_avg"}
// CHECK-SAME: {graph.state = "b.exp_avg_sq"}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {graph.step}
// CHECK-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {graph.lr}
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<3x5xf32> {graph.param = "w"}, tensor<5xf32> {graph.param = "b"}, tensor<3x5xf32> {graph.state = "w.exp_avg"}, tensor<3x5xf32> {graph.state = "w.exp_avg_sq"}, tensor<5xf32> {graph.state = "b.exp_avg"}, tensor<5xf32> {graph.state = "b.exp_avg_sq"}, tensor<i64> {graph.step})
// The step being taken (1-based) is computed first: dropout keys and the optimizer use it.
// CHECK: %[[NEXT:.*]] = graph.add %[[STEP]], %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: %[[LOSS:.*]], %[[LOGP:.*]] = graph.softmax_cross_entropy_loss
// CHECK: %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DS:.*]] = graph.softmax_cross_entropy_loss_grad %[[ONE]], %[[LOGP]]
// CHECK: %[[DR:.*]] = graph.where %{{.*}}, %{{.*}}, %[[DS]]
// CHECK: %[[DZ:.*]] = graph.where %{{.*}}, %[[DR]], %{{.*}}
// The bias was broadcast over the batch: its gradient sums over it.
// CHECK: %[[DBS:.*]] = graph.reduce_sum %[[DZ]] {axes = array<i64: 0>, keepdims = true}
// CHECK: %[[DB:.*]] = graph.reshape %[[DBS]] : (tensor<1x5xf32>) -> tensor<5xf32>
// CHECK: %[[XT:.*]] = graph.transpose %[[X]] {perm = array<i64: 1, 0>}
// CHECK: %[[DW:.*]] = graph.matmul %[[XT]], %[[DZ]]
// CHECK: graph.adamw_update %[[W]], %[[DW]], %[[WM]], %[[WV]], %[[NEXT]], %[[LR]] {{{.*}}weight_decay = 1.000000e-02 : f64}
// CHECK: graph.adamw_update %[[B]], %[[DB]]
// CHECK-NOT: graph.adamw_update
// CHECK: return %[[LOSS]], {{.*}}, %[[NEXT]]

// With SGD, clipping and b frozen: only w trains, its gradient is clipped by the global norm.
// SGD-LABEL: func.func @train_step(
// SGD-SAME: {graph.state = "w.momentum_buffer"}
// SGD-NOT: b.momentum_buffer
// SGD: %[[NORM:.*]] = graph.global_norm %[[DW:.*]] : (tensor<3x5xf32>) -> tensor<f32>
// SGD: %[[CLIPPED:.*]] = graph.scale_by_clip %[[DW]], %[[NORM]] {max_norm = 1.000000e+00 : f32}
// SGD: graph.sgd_update %{{.*}}, %[[CLIPPED]], {{.*}} {dampening = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 0.000000e+00 : f64}
// SGD-NOT: graph.sgd_update
// SGD: return
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %y: tensor<4xi64> {graph.input = "y"},
                   %w: tensor<3x5xf32> {graph.param = "w"}, %bias: tensor<5xf32> {graph.param = "b"},
                   %mask: tensor<4x5xf32> {graph.param = "mask"})
    -> (tensor<f32> {graph.output = "loss"}, tensor<4x5xf32> {graph.output = "logits"}) {
  %h = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %z = graph.add %h, %bias : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %r = graph.relu %z : tensor<4x5xf32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %m = graph.equal %mask, %zero : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xi1>
  %ninf = graph.constant dense<-1.0e4> : tensor<f32>
  %s = graph.where %m, %ninf, %r : (tensor<4x5xi1>, tensor<f32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %loss, %logp = graph.softmax_cross_entropy_loss %s, %y {reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
  return %loss, %s : tensor<f32>, tensor<4x5xf32>
}

// -----

// Tied embedding: one parameter used by the gather (input embedding) and the output
// projection. Both gradients are summed into one update.
// CHECK-LABEL: func.func @train_step(
// CHECK: graph.matmul
// CHECK: %[[GG:.*]] = graph.gather_grad
// CHECK: %[[SUM:.*]] = graph.add %{{.*}}, %[[GG]]
// CHECK: graph.adamw_update %{{.*}}, %[[SUM]]
func.func @forward(%idx: tensor<2x3xi64> {graph.input = "idx"}, %t: tensor<2x3xi64> {graph.input = "t"},
                   %emb: tensor<7x4xf32> {graph.param = "emb"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.gather %emb, %idx {axis = 0 : i64} : (tensor<7x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %et = graph.transpose %emb {perm = array<i64: 1, 0>} : (tensor<7x4xf32>) -> tensor<4x7xf32>
  %logits = graph.matmul %e, %et : (tensor<2x3x4xf32>, tensor<4x7xf32>) -> tensor<2x3x7xf32>
  %l = graph.transpose %logits {perm = array<i64: 0, 2, 1>} : (tensor<2x3x7xf32>) -> tensor<2x7x3xf32>
  %loss, %lp = graph.softmax_cross_entropy_loss %l, %t {reduction = "mean"} : (tensor<2x7x3xf32>, tensor<2x3xi64>) -> (tensor<f32>, tensor<2x7x3xf32>)
  return %loss : tensor<f32>
}

// -----

// Training dropout: the step gets a seed argument, the dropout the key (seed, step + 1), and
// its gradient reuses the forward's mask: where(mask, dy * 1/(1-ratio), 0). An inference
// dropout (no `training`) gets no key and folds away later.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {graph.step}
// CHECK-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {graph.lr}
// CHECK-SAME: %[[SEED:[a-z0-9]+]]: tensor<i64> {graph.seed}
// CHECK: %[[NEXT:.*]] = graph.add %[[STEP]]
// CHECK: %[[Y:.*]], %[[MASK:.*]] = graph.dropout %{{.*}}, %[[SEED]], %[[NEXT]] {ratio = 2.500000e-01 : f32, stream = 3 : i64, training}
// CHECK: graph.dropout %{{.*}} {ratio = 5.000000e-01 : f32, stream = 4 : i64} : (tensor<4xf32>) ->
// CHECK: %[[SCALE:.*]] = graph.constant dense<1.33333337> : tensor<f32>
// CHECK: %[[SCALED:.*]] = graph.mul %{{.*}}, %[[SCALE]]
// CHECK: graph.where %[[MASK]], %[[SCALED]], %{{.*}}
// CHECK: graph.adamw_update
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}, %w: tensor<4xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d, %m = graph.dropout %h {ratio = 0.25 : f32, stream = 3 : i64, training} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  %e, %m2 = graph.dropout %d {ratio = 0.5 : f32, stream = 4 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  %loss = graph.reduce_sum %e {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{training needs a scalar float output (the loss)}}
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}, %w: tensor<4xf32> {graph.param = "w"}) -> (tensor<4xf32> {graph.output = "y"}) {
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
