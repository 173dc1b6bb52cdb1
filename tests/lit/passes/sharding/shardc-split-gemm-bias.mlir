// RUN: shardc-opt %s --shardc-split-gemm-bias | FileCheck %s
// RUN: shardc-opt %s --shardc-split-gemm-bias --shardc-build-train-step --shardc-propagate-sharding="ranks=1 tp=2" --shardc-partition | FileCheck %s --check-prefix=TP

// nn.Linear's Gemm with its bias becomes the product and an add of the bias; beta scales a
// bias first; a Gemm without a bias is left as it is.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[P:.*]] = graph.gemm %arg0, %arg2 {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[H:.*]] = graph.add %[[P]], %arg3 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK: %[[R:.*]] = graph.relu %[[H]]
// CHECK: %[[Q:.*]] = graph.gemm %[[R]], %arg4 {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true}
// CHECK: %[[BETA:.*]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[B:.*]] = graph.mul %arg5, %[[BETA]]
// CHECK: graph.add %[[Q]], %[[B]]
// CHECK: graph.gemm %{{.*}}, %arg6 {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>

// Megatron's MLP on nn.Linear Gemms: fc1 column-parallel with its bias, fc2 row-parallel; its
// bias is added after the all-reduce over tp of the partial product, once.
// TP-LABEL: func.func @train_step(
// TP-SAME: tensor<8x8xf32> {graph.param = "fc1.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// TP-SAME: tensor<8xf32> {graph.param = "fc1.bias", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// TP-SAME: tensor<8x8xf32> {graph.param = "fc2.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// TP-SAME: tensor<8xf32> {graph.param = "fc2.bias"}
// TP: %[[ROW:.*]] = graph.gemm %{{.*}}, %arg4 {{.*}}partial = sum[1]{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// TP: %[[SUM:.*]] = mesh.all_reduce %[[ROW]] on @mesh mesh_axes = [1]
// TP: graph.add %[[SUM]], %{{.*}}
func.func @forward(%x: tensor<4x8xf32> {graph.input = "x"}, %y: tensor<4xi64> {graph.input = "y"},
                   %w1: tensor<16x8xf32> {graph.param = "fc1.weight"}, %b1: tensor<16xf32> {graph.param = "fc1.bias"},
                   %w2: tensor<8x16xf32> {graph.param = "fc2.weight"}, %b2: tensor<8xf32> {graph.param = "fc2.bias"},
                   %wh: tensor<3x8xf32> {graph.param = "head.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.gemm %x, %w1, %b1 {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = graph.relu %h : tensor<4x16xf32>
  %o = graph.gemm %r, %w2, %b2 {alpha = 2.0 : f32, beta = 0.5 : f32, trans_a = false, trans_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %z = graph.gemm %o, %wh {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "sum"} : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
  return %l : tensor<f32>
}
