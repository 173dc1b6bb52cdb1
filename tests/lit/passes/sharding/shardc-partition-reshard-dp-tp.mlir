// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2 tp=2" --shardc-partition | FileCheck %s

// Resharding on a dp x tp mesh: an op that needs the batch whole gets its operands whole on tp
// first (gathered where split, summed where pending), as for the whole-operand form; its
// results are cut back to their tp blocks after it (a local slice).

// A softmax over the batch of the columns a column-parallel product split on tp: the columns
// are gathered on tp, exchanged on dp from rows into column blocks (all_to_all), the softmax
// runs on [8, 4], and its result goes back to rows by all_to_all and to tp's columns by a
// slice.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: graph.resharding = ["op graph.softmax: softmax normalises over it; computed in blocks of its dimension of 8 instead: 192 bytes sent per rank (128 by all-to-all, 64 by all-gather), where gathering its operands whole would send 192"]
// CHECK: %[[T:.*]] = graph.tanh %{{.*}} {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0], [1]]>]} : tensor<4x4xf32>
// CHECK: graph.all_gather %{{.*}} on @mesh {mesh_axes = array<i16: 1>} : (tensor<16xf32>) -> tensor<2x4x4x1xf32>
// CHECK: graph.all_to_all %{{.*}} on @mesh {mesh_axes = array<i16: 0>} : (tensor<32xf32>) -> tensor<32xf32>
// CHECK: %[[S:.*]] = graph.softmax %{{.*}} {axis = 0 : i64, graph.shardings = [#mesh.shard<@mesh, {{\[\[}}], [0]]>]} : tensor<8x4xf32>
// CHECK: graph.all_to_all %{{.*}} on @mesh {mesh_axes = array<i16: 0>} : (tensor<32xf32>) -> tensor<32xf32>
// CHECK: graph.shard_slice %{{.*}} on @mesh {mesh_axes = array<i16: 1>} : (tensor<32xf32>) -> tensor<16xf32>
// CHECK: %[[B:.*]] = graph.reshape %{{.*}} {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0], [1]]>]} : (tensor<16xf32>) -> tensor<4x4xf32>
// CHECK: graph.mul %[[B]], %[[T]]
func.func @forward(%x: tensor<8x6xf32> {graph.input = "x"}, %w1: tensor<6x8xf32> {graph.param = "w1"}, %w2: tensor<8x6xf32> {graph.param = "w2"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<8x6xf32>, tensor<6x8xf32>) -> tensor<8x8xf32>
  %a = graph.tanh %h : tensor<8x8xf32>
  %b = graph.softmax %a {axis = 0 : i64} : tensor<8x8xf32>
  %m = graph.mul %b, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %c = graph.matmul %m, %w2 : (tensor<8x8xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  %d = graph.softmax %c {axis = 1 : i64} : tensor<8x6xf32>
  %l = graph.reduce_sum %d {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A pooling weight over the batch computed by a row-parallel product: its sum over tp is
// pending when the softmax over the batch takes it. The all-reduce keeps the rows' split on dp,
// which the all-gather then makes whole (a [batch, 1] has no other dimension to work in).
// CHECK-LABEL: func.func @forward(
// CHECK: %[[P:.*]] = graph.matmul {{.*}}partial = sum[1]>]} : (tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK: %[[R:.*]] = mesh.all_reduce %[[P]] on @mesh mesh_axes = [1] {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0]]>]} : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK: %[[F:.*]] = graph.reshape %[[R]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK: %[[W:.*]] = graph.all_gather %[[F]] on @mesh {mesh_axes = array<i16: 0>} : (tensor<4xf32>) -> tensor<8x1xf32>
// CHECK: graph.softmax %[[W]] {axis = 0 : i64, graph.whole_operands = "softmax normalises over it"} : tensor<8x1xf32>

func.func @forward(%x: tensor<8x6xf32> {graph.input = "x"}, %w1: tensor<6x8xf32> {graph.param = "w1"}, %v: tensor<8x1xf32> {graph.param = "v"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<8x6xf32>, tensor<6x8xf32>) -> tensor<8x8xf32>
  %a = graph.tanh %h : tensor<8x8xf32>
  %s = graph.matmul %a, %v : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %p = graph.softmax %s {axis = 0 : i64} : tensor<8x1xf32>
  %m = graph.mul %p, %a : (tensor<8x1xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %l = graph.reduce_sum %m {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
