// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2" | FileCheck %s
// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2" --shardc-partition | FileCheck %s --check-prefix=LOCAL

// A packed QKV projection cut by Slice into equal thirds (nn.MultiheadAttention's in_proj as
// torch exports chunk(3), Phi-style fused projections): each slice picks one of 3 groups, so
// the heads split on tp strided, as a Split of the projection would: the weight is 3 groups,
// each device holding its block of each, and each local slice takes its block of its group.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg1: tensor<8x24xf32> {graph.param = "qkv.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>, graph.split_groups = array<i64: 1, 3>}
// CHECK-SAME: %arg2: tensor<8x8xf32> {graph.param = "out.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// LOCAL-LABEL: func.func @forward(
// LOCAL-SAME: %arg1: tensor<8x12xf32>
// LOCAL: %[[A:.*]] = graph.matmul %arg0, %arg1 {{.*}}-> tensor<2x4x12xf32>
// LOCAL: graph.slice %[[A]] {ends = array<i64: 2, 4, 4>, {{.*}}starts = array<i64: 0, 0, 0>{{.*}} -> tensor<2x4x4xf32>
// LOCAL: graph.slice %[[A]] {ends = array<i64: 2, 4, 8>, {{.*}}starts = array<i64: 0, 0, 4>{{.*}} -> tensor<2x4x4xf32>
// LOCAL: graph.slice %[[A]] {ends = array<i64: 2, 4, 12>, {{.*}}starts = array<i64: 0, 0, 8>{{.*}} -> tensor<2x4x4xf32>
// LOCAL: %[[Y:.*]] = graph.matmul {{.*}}, %arg2 {{.*}}partial = sum[1]{{.*}}-> tensor<2x4x8xf32>
// LOCAL: mesh.all_reduce %[[Y]] on @mesh mesh_axes = [1]
func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"}, %w: tensor<8x24xf32> {graph.param = "qkv.weight"},
                   %wo: tensor<8x8xf32> {graph.param = "out.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %q = graph.slice %a {starts = array<i64: 0, 0, 0>, ends = array<i64: 2, 4, 8>, steps = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %k = graph.slice %a {starts = array<i64: 0, 0, 8>, ends = array<i64: 2, 4, 16>, steps = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %v = graph.slice %a {starts = array<i64: 0, 0, 16>, ends = array<i64: 2, 4, 24>, steps = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %qk = graph.mul %q, %k : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h = graph.add %qk, %v : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.matmul %h, %wo : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %n = graph.softmax %y {axis = 2 : i64} : tensor<2x4x8xf32>
  %l = graph.reduce_sum %n {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
