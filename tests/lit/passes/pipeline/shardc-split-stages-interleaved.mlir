// Interleaved 1F1B: four layers cut into 2 · 2 virtual stages (shardc-assign-stages with
// virtual-stages=2), rank 0 holding virtual stages 0 and 2 (/h.0, /h.2: w0 and w2), rank 1
// holding 1 and 3. With two microbatches rank 0 runs F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0:
// each chunk-step's activation goes to rank 1 and its next chunk's comes back from rank 1 in
// the same transfer, the gradients likewise.
// RUN: shardc-opt %s --shardc-decompose-mean-loss --shardc-assign-stages="stages=4 virtual-stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=0 schedule=interleaved virtual-stages=2" | FileCheck %s
// More microbatches than ranks have a steady state in which the ranks would wait on each
// other's sends around the ring: every transfer of the program is posted (its send does not
// wait for the receiver), and the plan says so. The layers must divide into the chunks.
// RUN: shardc-opt %s --shardc-decompose-mean-loss --shardc-assign-stages="stages=4 virtual-stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=4" --shardc-partition="local-rows=1" --shardc-micro-batches="micro-batches=4" --shardc-split-stages="stages=2 stage=0 schedule=interleaved virtual-stages=2" | FileCheck %s --check-prefix=POSTED
// RUN: not shardc-opt %s --shardc-assign-stages="stages=6 virtual-stages=3" 2>&1 | FileCheck %s --check-prefix=DIVIDE

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: {graph.param = "w0"}
// CHECK-SAME: {graph.param = "w2"}
// CHECK-NOT: graph.param = "w1"
// CHECK-NOT: graph.param = "w3"
// CHECK-SAME: graph.pipeline_schedule = ["schedule interleaved, 2 stages of 2 chunks, 2 microbatches: predicted idle {{[0-9.]+}}% of the step (uniform stages: (p-1)/(v*m+p-1) = 20.0%; 1F1B: (p-1)/(m+p-1) = 33.3%)"
// CHECK-SAME: "stage 0: layers /h.0, chunk 1: /h.2, 2 parameters
// CHECK-SAME: steps F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0
// CHECK: %[[A0:.*]] = graph.matmul %{{.*}}, %arg1 {graph.micro_batch = 0 : i64{{.*}}graph.stage = 0 : i64
// CHECK-NEXT: graph.send_recv %[[A0]] on @dp {mesh_axes = array<i16: 1>, send_to = 1 : i64} : (tensor<2x3xf32>) -> ()
// CHECK: %[[A1:.*]] = graph.matmul %{{.*}}, %arg1 {graph.micro_batch = 1 : i64{{.*}}graph.stage = 0 : i64
// CHECK-NEXT: %[[H1:.*]] = graph.send_recv %[[A1]] on @dp {mesh_axes = array<i16: 1>, recv_from = 1 : i64, send_to = 1 : i64}
// CHECK-NEXT: %[[C0:.*]] = graph.matmul %[[H1]], %arg2 {graph.micro_batch = 0 : i64{{.*}}graph.stage = 2 : i64
// CHECK-NEXT: %[[H1B:.*]] = graph.send_recv %[[C0]] on @dp {mesh_axes = array<i16: 1>, recv_from = 1 : i64, send_to = 1 : i64}
// CHECK-NEXT: %[[C1:.*]] = graph.matmul %[[H1B]], %arg2 {graph.micro_batch = 1 : i64{{.*}}graph.stage = 2 : i64
// CHECK-NEXT: %[[G0:.*]] = graph.send_recv %[[C1]] on @dp {mesh_axes = array<i16: 1>, recv_from = 1 : i64, send_to = 1 : i64}
// CHECK: graph.matmul %[[G0]], {{.*}}graph.micro_batch = 0 : i64{{.*}}graph.stage = 2 : i64
// CHECK: graph.adamw_update %arg1,
// CHECK: graph.adamw_update %arg2,

// POSTED: graph.pipeline_schedule = ["schedule interleaved, 2 stages of 2 chunks, 4 microbatches: predicted idle {{[0-9.]+}}% of the step (uniform stages: (p-1)/(v*m+p-1) = 11.1%; 1F1B: (p-1)/(m+p-1) = 20.0%)", "transfers posted: a send does not wait for its receiver
// POSTED-SAME: steps F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0
// POSTED: graph.send_recv %{{.*}} on @dp {mesh_axes = array<i16: 1>, posted, send_to = 1 : i64}
// POSTED-NOT: mesh_axes = array<i16: 1>, recv_from
// POSTED-NOT: mesh_axes = array<i16: 1>, send_to
// POSTED: graph.adamw_update %arg1,
// DIVIDE: error: --virtual-stages 3 does not divide the model's 4 repeated layers (each rank holds 3 chunks of them)
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %y: tensor<4xi64> {graph.input = "y"},
                   %w0: tensor<3x3xf32> {graph.param = "w0"}, %w1: tensor<3x3xf32> {graph.param = "w1"},
                   %w2: tensor<3x3xf32> {graph.param = "w2"}, %w3: tensor<3x5xf32> {graph.param = "w3"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h0 = graph.matmul %x, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.0/MatMul")
  %h1 = graph.matmul %h0, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.1/MatMul")
  %h2 = graph.matmul %h1, %w2 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.2/MatMul")
  %s = graph.matmul %h2, %w3 : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("/h.3/MatMul")
  %l, %lp = graph.softmax_cross_entropy_loss %s, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>) loc("/loss")
  return %l : tensor<f32>
}
