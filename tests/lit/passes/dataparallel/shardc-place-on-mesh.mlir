// RUN: shardc-opt %s --shardc-build-train-step --shardc-place-on-mesh="ranks=4 zero=1" | FileCheck %s
// RUN: shardc-opt %s --shardc-build-train-step --shardc-place-on-mesh="ranks=4 zero=3" | FileCheck %s --check-prefix=Z3

// CHECK: mesh.mesh @dp(shape = 4) {graph.axis_names = ["dp"]}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: {graph.input = "y", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: {graph.param = "fc1.weight", graph.sharding = #mesh.shard<@dp, []>}
// CHECK-SAME: {graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 3]>, graph.state = "fc1.weight.exp_avg"}
// CHECK-SAME: {graph.sharding = #mesh.shard<@dp, []>, graph.step}
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss", graph.sharding = #mesh.shard<@dp, []>}
// CHECK-SAME: attributes {graph.mesh = @dp, graph.zero_stage = 1 : i64}
// Z3: {graph.param = "fc1.weight", graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 3]>}
// Z3-SAME: {graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 3]>, graph.state = "fc1.weight.exp_avg"}
// Z3-SAME: graph.zero_stage = 3 : i64
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
