// A step of 4 rows run as 2 microbatches. shardc-partition has written it for one microbatch
// (local-rows); shardc-micro-batches clones what depends on the batch once per microbatch,
// each clone reading its slice of the inputs, and adds up every sum over the batch in
// microbatch order. The mean loss divides by the count of labels not ignored, a sum over the
// batch that every microbatch's loss and gradient read: it splits the loop into two phases,
// the counts of both microbatches first, then each microbatch's forward and backward back to
// back, its loss and gradient added to the running sums. The optimizer runs once, on the sum.
// RUN: shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" | FileCheck %s
// On 2 data-parallel devices (1 row per microbatch) the count's all-reduce over dp stays, after
// the microbatches' counts are added.
// RUN: shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-build-train-step --shardc-propagate-sharding="ranks=2 micro-batches=2" --shardc-partition="local-rows=1" --shardc-micro-batches="micro-batches=2" | FileCheck %s --check-prefix=DP2
// Without a batch split by propagation there is nothing to cut.
// RUN: not shardc-opt %s -split-input-file --shardc-decompose-mean-loss --shardc-build-train-step --shardc-micro-batches="micro-batches=2" 2>&1 | FileCheck %s --check-prefix=NOBATCH

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %arg0: tensor<4x3xf32> {graph.input = "x"
// CHECK-SAME: %arg1: tensor<4xi64> {graph.input = "y"
// CHECK-SAME: graph.micro_batches = 2 : i64
// Phase 1: each microbatch's count of labels, then their sum (on one device, the sum).
// CHECK: %[[Y0:.*]] = graph.slice %arg1 {ends = array<i64: 2>, {{.*}}starts = array<i64: 0>
// CHECK: %[[C0:.*]] = graph.reduce_sum
// CHECK: %[[Y1:.*]] = graph.slice %arg1 {ends = array<i64: 4>, {{.*}}starts = array<i64: 2>
// CHECK: %[[C1:.*]] = graph.reduce_sum
// CHECK-NEXT: %[[COUNT:.*]] = graph.add %[[C0]], %[[C1]]
// Phase 2, microbatch 0: forward, loss, backward.
// CHECK-NEXT: %[[X0:.*]] = graph.slice %arg0 {ends = array<i64: 2, 3>, {{.*}}starts = array<i64: 0, 0>
// CHECK-NEXT: %[[S0:.*]] = graph.matmul %[[X0]], %arg2 {graph.micro_batch = 0 : i64{{.*}} -> tensor<2x5xf32>
// CHECK-NEXT: %[[L0:.*]], %[[P0:.*]] = graph.softmax_cross_entropy_loss %[[S0]], %[[Y0]]
// CHECK-NEXT: %[[M0:.*]] = graph.div %[[L0]], %[[COUNT]]
// CHECK: %[[G0:.*]] = graph.matmul {{.*}} -> tensor<3x5xf32>
// Microbatch 1, its loss and gradient added to microbatch 0's.
// CHECK-NEXT: %[[X1:.*]] = graph.slice %arg0 {ends = array<i64: 4, 3>, {{.*}}starts = array<i64: 2, 0>
// CHECK-NEXT: %[[S1:.*]] = graph.matmul %[[X1]], %arg2 {graph.micro_batch = 1 : i64
// CHECK-NEXT: %[[L1:.*]], %{{.*}} = graph.softmax_cross_entropy_loss %[[S1]], %[[Y1]]
// CHECK-NEXT: %[[M1:.*]] = graph.div %[[L1]], %[[COUNT]]
// CHECK-NEXT: %[[LOSS:.*]] = graph.add %[[M0]], %[[M1]]
// CHECK: %[[G1:.*]] = graph.matmul {{.*}} -> tensor<3x5xf32>
// CHECK-NEXT: %[[G:.*]] = graph.add %[[G0]], %[[G1]]
// CHECK: graph.adamw_update %arg2, %[[G]],
// CHECK-NOT: graph.adamw_update
// CHECK: return %[[LOSS]],

// DP2-LABEL: func.func @train_step(
// DP2-SAME: %arg0: tensor<2x3xf32> {graph.input = "x"
// DP2: %[[C0:.*]] = graph.reduce_sum
// DP2: %[[C1:.*]] = graph.reduce_sum
// DP2-NEXT: %[[SUM:.*]] = graph.add %[[C0]], %[[C1]]
// DP2-NEXT: %[[COUNT:.*]] = mesh.all_reduce %[[SUM]] on @dp mesh_axes = [0]
// DP2: graph.div %{{.*}}, %[[COUNT]]
// DP2-NOT: mesh.all_reduce

// NOBATCH: error: --micro-batches 2: no graph input is split along a batch dimension, so the batch cannot be cut into microbatches
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %y: tensor<4xi64> {graph.input = "y"},
                   %w: tensor<3x5xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %s = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %s, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
  return %l : tensor<f32>
}
