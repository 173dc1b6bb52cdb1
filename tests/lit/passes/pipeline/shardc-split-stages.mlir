// Two layers and a head cut into two stages (shardc-assign-stages), the step built, its batch
// run as two microbatches, and each stage's part kept under 1F1B. Stage 0 runs F0, sends
// microbatch 0's activation, runs F1, then sends microbatch 1's while receiving microbatch 0's
// gradient in one transfer (1F1B's steady state), runs B0, receives B1's gradient, runs B1;
// then the loss (zeros here) summed over the new pp axis, and the updates of its parameters.
// Stage 1 receives, runs F0 B0, sends the gradient back while receiving microbatch 1, runs
// F1 B1 and sends the last gradient; its loss is the one summed over pp.
// RUN: shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-assign-stages="stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=0 schedule=1f1b" | FileCheck %s --check-prefix=STAGE0
// RUN: shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-assign-stages="stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=1 schedule=1f1b" | FileCheck %s --check-prefix=STAGE1
// The schedule and the cut as plan.txt shows them.
// RUN: shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-assign-stages="stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=1 schedule=gpipe" | FileCheck %s --check-prefix=PLAN
// Zero bubble (ZB-H1) on the last stage: F0 B0 F1 B1 W0 W1. Each B computes only the input
// gradient the stage before waits for (sent at once); the weight gradients of w2 (W) run
// after both, filling what would be the cool-down bubble.
// RUN: shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-assign-stages="stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=1 schedule=zb-h1" | FileCheck %s --check-prefix=ZB
// Refused: naive with two microbatches, interleaved without chunks.
// RUN: not shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-assign-stages="stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=0 schedule=naive" 2>&1 | FileCheck %s --check-prefix=NAIVE
// RUN: not shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-assign-stages="stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=0 schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=NOCHUNKS

// STAGE0: mesh.mesh @dp(shape = 1x2) {graph.axis_names = ["dp", "pp"]}
// STAGE0-LABEL: func.func @train_step(
// STAGE0-SAME: %arg0: tensor<4x3xf32> {graph.input = "x"
// STAGE0-NOT: graph.input = "y"
// STAGE0-NOT: graph.param = "w2"
// STAGE0-SAME: graph.stage = 0 : i64
// STAGE0: %[[A0:.*]] = graph.matmul %{{.*}}, %arg2 {graph.micro_batch = 0 : i64
// STAGE0-NEXT: graph.send_recv %[[A0]] on @dp {mesh_axes = array<i16: 1>, send_to = 1 : i64} : (tensor<2x3xf32>) -> ()
// STAGE0: %[[A1:.*]] = graph.matmul %{{.*}}, %arg2 {graph.micro_batch = 1 : i64
// STAGE0-NEXT: %[[G0:.*]] = graph.send_recv %[[A1]] on @dp {mesh_axes = array<i16: 1>, recv_from = 1 : i64, send_to = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// STAGE0: graph.matmul %[[G0]], {{.*}}graph.micro_batch = 0 : i64
// STAGE0: %[[G1:.*]] = graph.send_recv  on @dp {mesh_axes = array<i16: 1>, recv_from = 1 : i64} : () -> tensor<2x3xf32>
// STAGE0: graph.matmul %[[G1]], {{.*}}graph.micro_batch = 1 : i64
// STAGE0: %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<f32>
// STAGE0-NEXT: %[[LOSS:.*]] = mesh.all_reduce %[[ZERO]] on @dp mesh_axes = [1]
// STAGE0: graph.adamw_update %arg1,
// STAGE0: graph.adamw_update %arg2,
// STAGE0-NOT: graph.adamw_update
// STAGE0: return %[[LOSS]],

// STAGE1-LABEL: func.func @train_step(
// STAGE1-SAME: %arg0: tensor<4xi64> {graph.input = "y"
// STAGE1-SAME: %arg1: tensor<3x5xf32> {graph.param = "w2"}
// STAGE1: %[[A0:.*]] = graph.send_recv  on @dp {mesh_axes = array<i16: 1>, recv_from = 0 : i64} : () -> tensor<2x3xf32>
// STAGE1: graph.matmul %[[A0]], %arg1 {graph.micro_batch = 0 : i64
// STAGE1: %[[D0:.*]] = graph.matmul {{.*}}graph.micro_batch = 0 : i64{{.*}} -> tensor<2x3xf32>
// STAGE1: %[[A1:.*]] = graph.send_recv %[[D0]] on @dp {mesh_axes = array<i16: 1>, recv_from = 0 : i64, send_to = 0 : i64}
// STAGE1: graph.matmul %[[A1]], %arg1 {graph.micro_batch = 1 : i64
// STAGE1: %[[D1:.*]] = graph.matmul {{.*}}graph.micro_batch = 1 : i64{{.*}} -> tensor<2x3xf32>
// STAGE1: graph.send_recv %[[D1]] on @dp {mesh_axes = array<i16: 1>, send_to = 0 : i64} : (tensor<2x3xf32>) -> ()
// STAGE1-NEXT: %[[LOSS:.*]] = mesh.all_reduce %{{.*}} on @dp mesh_axes = [1]
// STAGE1: graph.adamw_update %arg1,
// STAGE1-NOT: graph.adamw_update
// STAGE1: return %[[LOSS]],

// PLAN: graph.pipeline_cuts = ["cut 0|1: per microbatch 1 value(s), 24 B forward, 1 gradient(s), 24 B backward: /h.1/MatMul/mb0 (24 B)"]
// PLAN-SAME: graph.pipeline_schedule = ["schedule gpipe, 2 stages, 2 microbatches: predicted idle
// PLAN-SAME: "stage 0: layers /h.0 .. /h.1, 2 parameters (72 B on this rank), {{[^;]*}}; steps F0 F1 B0 B1 (activations of at most 2 microbatches held)"
// PLAN-SAME: "stage 1: layers /h.2, 1 parameters (60 B on this rank), {{[^;]*}}; steps F0 F1 B0 B1

// NAIVE: error: --schedule naive runs one microbatch (layers on different devices, one at a time); got --micro-batches 2 (use gpipe or 1f1b)
// ZB-LABEL: func.func @train_step(
// ZB-SAME: graph.pipeline_schedule = ["schedule zb-h1, 2 stages, 2 microbatches: predicted idle {{[0-9.]+}}% of the step (uniform stages, F = B = W: (p-1)/(3m+p-1) = 14.3%, a third of 1F1B's bubble; 1F1B: (p-1)/(m+p-1) = 33.3%)"
// ZB-SAME: steps F0 B0 F1 B1 W0 W1 (activations of at most 2 microbatches held)
// ZB: %[[A0:.*]] = graph.send_recv  on @dp {mesh_axes = array<i16: 1>, recv_from = 0 : i64} : () -> tensor<2x3xf32>
// ZB: graph.matmul %[[A0]], %arg1 {graph.micro_batch = 0 : i64
// ZB: %[[D0:.*]] = graph.matmul {{.*}}graph.micro_batch = 0 : i64{{.*}} -> tensor<2x3xf32>
// ZB-NEXT: %[[A1:.*]] = graph.send_recv %[[D0]] on @dp {mesh_axes = array<i16: 1>, recv_from = 0 : i64, send_to = 0 : i64}
// ZB-NOT: tensor<3x5xf32>
// ZB: graph.matmul %[[A1]], %arg1 {graph.micro_batch = 1 : i64
// ZB: %[[D1:.*]] = graph.matmul {{.*}}graph.micro_batch = 1 : i64{{.*}} -> tensor<2x3xf32>
// ZB-NEXT: graph.send_recv %[[D1]] on @dp {mesh_axes = array<i16: 1>, send_to = 0 : i64} : (tensor<2x3xf32>) -> ()
// ZB-NEXT: graph.transpose
// ZB-NEXT: graph.matmul {{.*}}graph.micro_batch = 0 : i64{{.*}} -> tensor<3x5xf32>
// ZB: graph.matmul {{.*}}graph.micro_batch = 1 : i64{{.*}} -> tensor<3x5xf32>
// ZB: mesh.all_reduce %{{.*}} on @dp mesh_axes = [1]
// ZB: graph.adamw_update %arg1,

// NOCHUNKS: error: --schedule interleaved needs --virtual-stages 2 or more (model chunks per rank); got 1
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %y: tensor<4xi64> {graph.input = "y"},
                   %w0: tensor<3x3xf32> {graph.param = "w0"}, %w1: tensor<3x3xf32> {graph.param = "w1"},
                   %w2: tensor<3x5xf32> {graph.param = "w2"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.relu %x : tensor<4x3xf32> loc("/embed/Relu")
  %h0 = graph.matmul %e, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.0/MatMul")
  %h1 = graph.matmul %h0, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.1/MatMul")
  %s = graph.matmul %h1, %w2 : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("/h.2/MatMul")
  %l, %lp = graph.softmax_cross_entropy_loss %s, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>) loc("/loss")
  return %l : tensor<f32>
}
