// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" --shardc-partition -verify-diagnostics | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=1 tp=2" --shardc-partition | FileCheck %s --check-prefix=TP

// A sequence-first block as nn.MultiheadAttention writes its output projection: [seq, batch,
// embed] merged into [seq * batch, embed], projected, and split back. The batch (dim 1: the
// softmax over dim 0 mixes the sequence) is the minor part of the merged rows, so each device
// holds its 2 rows of every one of the 3 groups (graph.split_groups), in the order its local
// reshape gives them.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<3x2x8xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}], [0]]>}
// CHECK: %[[M:.*]] = graph.reshape %arg0 {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>], graph.split_groups = [array<i64: 3, 1>]} : (tensor<3x2x8xf32>) -> tensor<6x8xf32>
// CHECK: %[[P:.*]] = graph.matmul %[[M]], %arg1 {{.*}}graph.split_groups = [array<i64: 3, 1>]{{.*}} : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
// CHECK: graph.reshape %[[P]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}], [0]]>]} : (tensor<6x8xf32>) -> tensor<3x2x8xf32>
// CHECK: graph.softmax {{.*}} : tensor<3x2x8xf32>
// Tensor parallelism does not split such a part: the weight's columns are split instead, and
// the merged rows keep all 4 rows of the batch (one data-parallel device).
// TP-LABEL: func.func @forward(
// TP-SAME: %arg1: tensor<8x4xf32> {graph.param = "w", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// TP: graph.reshape %arg0 {{.*}}: (tensor<3x4x8xf32>) -> tensor<12x8xf32>
// TP: graph.matmul {{.*}}: (tensor<12x8xf32>, tensor<8x4xf32>) -> tensor<12x4xf32>
func.func @forward(%x: tensor<3x4x8xf32> {graph.input = "x"}, %w: tensor<8x8xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %m = graph.reshape %x : (tensor<3x4x8xf32>) -> tensor<12x8xf32>
  %p = graph.matmul %m, %w : (tensor<12x8xf32>, tensor<8x8xf32>) -> tensor<12x8xf32>
  %r = graph.reshape %p : (tensor<12x8xf32>) -> tensor<3x4x8xf32>
  %s = graph.softmax %r {axis = 0 : i64} : tensor<3x4x8xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<3x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A merged dimension whose positions an op reads: a gather from the flattened rows by index
// (CLIP's pooling) may take any row b * 3 + j, which another device's block holds. The input
// rows and the indices are split all the same (the indices, joined to the rows by nothing but
// that gather, on a class of their own), and the gather needs the rows whole (resharding): it
// is computed in blocks of the hidden dimension instead, the rows exchanged into them by an
// all-to-all (half a device's block sent, where gathering them whole sends all of it).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x3x8xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: %arg1: tensor<2xi64> {graph.input = "i", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-DAG: %[[I:.*]] = graph.all_gather %arg1 on @dp {mesh_axes = array<i16: 0>} : (tensor<2xi64>) -> tensor<4xi64>
// CHECK-DAG: %[[X:.*]] = graph.all_to_all %{{.*}} on @dp {mesh_axes = array<i16: 0>} : (tensor<48xf32>) -> tensor<48xf32>
// CHECK: %[[XB:.*]] = graph.reshape %[[X]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}], [0]]>]} : (tensor<48xf32>) -> tensor<12x4xf32>
// CHECK: graph.gather %[[XB]], %[[I]] {axis = 0 : i64, graph.shardings = [#mesh.shard<@dp, {{\[\[}}], [0]]>]} : (tensor<12x4xf32>, tensor<4xi64>) -> tensor<4x4xf32>
func.func @forward(%x: tensor<4x3x8xf32> {graph.input = "x"}, %i: tensor<4xi64> {graph.input = "i"},
                   %w: tensor<8x8xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %m = graph.reshape %x : (tensor<4x3x8xf32>) -> tensor<12x8xf32>
  %g = graph.gather %m, %i {axis = 0 : i64} : (tensor<12x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %p = graph.matmul %g, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l = graph.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
