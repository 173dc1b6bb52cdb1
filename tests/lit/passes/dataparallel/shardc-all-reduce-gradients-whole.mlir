// RUN: shardc-opt %s --shardc-decompose-mean-loss --shardc-build-train-step --shardc-propagate-sharding="ranks=2" --shardc-partition --shardc-place-on-mesh="ranks=2 zero=0" --shardc-all-reduce-gradients | FileCheck %s
// RUN: shardc-opt %s --shardc-decompose-mean-loss --shardc-build-train-step --shardc-propagate-sharding="ranks=2" --shardc-partition --shardc-place-on-mesh="ranks=2 zero=1" --shardc-shard-optimizer-state | FileCheck %s --check-prefix=ZERO1

// A loss that adds a term of the weights alone (sum(v * v)) to a mean over the batch: the
// partitioner sums the batch part before the addition, so the loss and v's gradient are whole
// on every rank, and only w's gradient (partial = sum[0]) is reduced. Summing the whole ones
// over the ranks again would multiply them by the number of ranks.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[BATCH:.*]] = mesh.all_reduce %{{.*}} on @dp mesh_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK: %[[LOSS:.*]] = graph.add %[[BATCH]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[DV:.*]] = graph.add %{{.*}}, %{{.*}} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: %[[DW:.*]] = graph.matmul {{.*}}partial = sum[0]{{.*}} -> tensor<3x2xf32>
// CHECK-NEXT: %[[SUM:.*]] = graph.all_reduce %[[DW]] on @dp {bucket = 0 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NOT: all_reduce
// CHECK: graph.adamw_update %arg1, %[[SUM]],
// CHECK: graph.adamw_update %arg2, %[[DV]],
// CHECK-NOT: all_reduce
// CHECK: return %[[LOSS]],

// ZeRO-1: w's gradient is reduce-scattered, v's (whole) sliced to this rank's shard.
// ZERO1-LABEL: func.func @train_step(
// ZERO1: graph.shard_slice %[[DV:.*]] on @dp {{.*}}: (tensor<2xf32>) -> tensor<1xf32>
// ZERO1: graph.reduce_scatter %{{.*}} on @dp {bucket = 0 : i64} : (tensor<3x2xf32>) -> tensor<3xf32>
// ZERO1-NOT: graph.reduce_scatter %[[DV]]
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %w: tensor<3x2xf32> {graph.param = "w"},
                   %v: tensor<2xf32> {graph.param = "v"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %m = graph.reduce_mean %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %vv = graph.mul %v, %v : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = graph.reduce_sum %vv {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  %l = graph.add %m, %r : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
