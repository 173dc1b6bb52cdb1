// RUN: shardc-opt %s --shardc-build-train-step="grad-clip=1.0" --shardc-place-on-mesh="ranks=3 zero=2" --shardc-shard-optimizer-state="bucket-mb=0.00002" | FileCheck %s
// RUN: shardc-opt %s --shardc-build-train-step --shardc-place-on-mesh="ranks=3 zero=1" --shardc-shard-optimizer-state="bucket-mb=0.00002" | FileCheck %s --check-prefix=Z1

// Stage 2 on 3 ranks. Optimizer state is a flat shard: fc1.weight (12 elements) -> 4 each.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<4x3xf32> {graph.param = "fc1.weight", graph.sharding = #mesh.shard<@dp, []>}
// CHECK-SAME: %[[M1:[a-z0-9]+]]: tensor<4xf32> {graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 3]>, graph.state = "fc1.weight.exp_avg"}
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss", graph.sharding = #mesh.shard<@dp, []>}, tensor<4x3xf32> {graph.param = "fc1.weight", graph.sharding = #mesh.shard<@dp, []>}
// CHECK-SAME: tensor<4xf32> {graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 3]>, graph.state = "fc1.weight.exp_avg"}
// Each bucket is reduce-scattered as soon as its last gradient is final.
// CHECK: %[[DW2:.*]] = graph.matmul %{{.*}} : (tensor<3x2xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[S0:.*]] = graph.reduce_scatter %[[DW2]] on @dp {bucket = 0 : i64} : (tensor<3x5xf32>) -> tensor<5xf32>
// CHECK: %[[S1:.*]]:2 = graph.reduce_scatter %{{.*}}, %{{.*}} on @dp {bucket = 1 : i64} : (tensor<3xf32>, tensor<4x3xf32>) -> (tensor<1xf32>, tensor<4xf32>)
// This rank's part of each parameter, without communication.
// CHECK: %[[P:.*]]:3 = graph.shard_slice %[[W1]], %{{.*}}, %{{.*}} on @dp : (tensor<4x3xf32>, tensor<3xf32>, tensor<3x5xf32>) -> (tensor<4xf32>, tensor<1xf32>, tensor<5xf32>)
// Global norm from the shards: square, sum over the ranks, root.
// CHECK: %[[LN:.*]] = graph.global_norm %[[S1]]#1, %[[S1]]#0, %[[S0]]
// CHECK: %[[SQ:.*]] = graph.mul %[[LN]], %[[LN]]
// CHECK: %[[SUM:.*]] = mesh.all_reduce %[[SQ]] on @dp mesh_axes = [0]
// CHECK: %[[N:.*]] = graph.sqrt %[[SUM]]
// CHECK: %[[C:.*]] = graph.scale_by_clip %[[S1]]#1, %[[N]] {{.*}} -> tensor<4xf32>
// CHECK: %[[NP:.*]], %[[NM:.*]], %[[NV:.*]] = graph.adamw_update %[[P]]#0, %[[C]], %[[M1]], {{.*}} -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// Updated shards are gathered back into whole parameters.
// CHECK: %[[G:.*]]:2 = graph.all_gather %[[NP]], %{{.*}} on @dp {bucket = 0 : i64} : (tensor<4xf32>, tensor<1xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
// CHECK: return %{{.*}}, %[[G]]#0, %[[G]]#1, {{.*}}, %[[NM]], %[[NV]],

// Stage 1 keeps whole gradients until the backward pass is done: every reduce-scatter comes
// after the last gradient.
// Z1-LABEL: func.func @train_step(
// Z1: graph.matmul %{{.*}} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// Z1-NEXT: graph.reduce_scatter {{.*}} {bucket = 0 : i64}
// Z1-NEXT: graph.reduce_scatter {{.*}} {bucket = 1 : i64}
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
