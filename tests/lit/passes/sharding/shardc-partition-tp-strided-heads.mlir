// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2" --shardc-partition | FileCheck %s
// RUN: not shardc-opt %s --shardc-propagate-sharding="ranks=2 tp=2" --shardc-partition 2>&1 | FileCheck %s --check-prefix=DPTP

// Attention as nn.MultiheadAttention writes it (sequence-first): the heads are merged with the
// batch into [batch * heads] (here [2 * 4], head size 2) for the batched products. With one
// data-parallel device, tp splits the heads there as dp splits a batch merged into the minor
// part of a dimension: each device holds its 2 heads of every row (graph.split_groups: 2
// groups, the batch), the projections are column- and row-parallel, and the only collective
// is the output projection's all-reduce (Megatron's attention). The head size (the minor part
// of the 8 features) stays whole: its split would leave partial sums in the scores.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg1: tensor<8x4xf32> {graph.param = "q.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// CHECK-SAME: %arg4: tensor<4x8xf32> {graph.param = "o.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK-SAME: "replicated 'k.weight' dim 1 (size 8, its part in each of 4 groups): op graph.reshape: a reshape merges it into the minor part of a dimension"
// CHECK: %[[Q:.*]] = graph.reshape %{{.*}} {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}], [1]]>], graph.split_groups = [array<i64: 1, 2, 1>]} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
// CHECK: %[[S:.*]] = graph.matmul {{.*}} {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}1]]>], graph.split_groups = [array<i64: 2, 1, 1>]} : (tensor<4x3x2xf32>, tensor<4x2x3xf32>) -> tensor<4x3x3xf32>
// CHECK: graph.softmax %[[S]] {axis = 2 : i64, graph.shardings = [#mesh.shard<@mesh, {{\[\[}}1]]>], graph.split_groups = [array<i64: 2, 1, 1>]} : tensor<4x3x3xf32>
// CHECK: graph.reshape {{.*}} : (tensor<3x4x2xf32>) -> tensor<3x2x4xf32>
// CHECK: %[[O:.*]] = graph.matmul {{.*}}partial = sum[1]{{.*}} : (tensor<3x2x4xf32>, tensor<4x8xf32>) -> tensor<3x2x8xf32>
// CHECK-NOT: mesh.all_reduce
// CHECK: mesh.all_reduce %[[O]] on @mesh mesh_axes = [1]
// CHECK-NOT: mesh.all_reduce
// With dp=2 the batch's devices split the other part of [batch * heads]: one dimension is
// split on one mesh axis, so the heads stay whole (and, nothing else here being splittable,
// tp is refused in one line).
// DPTP: error: --strategy tp=2: no parameter dimension can be split on tp (the largest, 'q.weight' dim 1 (size 8): op graph.reshape: a reshape merges it into the minor part of a dimension with the batch, which dp=2 splits too)
func.func @forward(%x: tensor<3x2x8xf32> {graph.input = "x"},
                   %wq: tensor<8x8xf32> {graph.param = "q.weight"}, %wk: tensor<8x8xf32> {graph.param = "k.weight"},
                   %wv: tensor<8x8xf32> {graph.param = "v.weight"}, %wo: tensor<8x8xf32> {graph.param = "o.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %q = graph.matmul %x, %wq : (tensor<3x2x8xf32>, tensor<8x8xf32>) -> tensor<3x2x8xf32>
  %k = graph.matmul %x, %wk : (tensor<3x2x8xf32>, tensor<8x8xf32>) -> tensor<3x2x8xf32>
  %v = graph.matmul %x, %wv : (tensor<3x2x8xf32>, tensor<8x8xf32>) -> tensor<3x2x8xf32>
  %q3 = graph.reshape %q : (tensor<3x2x8xf32>) -> tensor<3x8x2xf32>
  %k3 = graph.reshape %k : (tensor<3x2x8xf32>) -> tensor<3x8x2xf32>
  %v3 = graph.reshape %v : (tensor<3x2x8xf32>) -> tensor<3x8x2xf32>
  %qt = graph.transpose %q3 {perm = array<i64: 1, 0, 2>} : (tensor<3x8x2xf32>) -> tensor<8x3x2xf32>
  %kt = graph.transpose %k3 {perm = array<i64: 1, 2, 0>} : (tensor<3x8x2xf32>) -> tensor<8x2x3xf32>
  %vt = graph.transpose %v3 {perm = array<i64: 1, 0, 2>} : (tensor<3x8x2xf32>) -> tensor<8x3x2xf32>
  %s = graph.matmul %qt, %kt : (tensor<8x3x2xf32>, tensor<8x2x3xf32>) -> tensor<8x3x3xf32>
  %p = graph.softmax %s {axis = 2 : i64} : tensor<8x3x3xf32>
  %o = graph.matmul %p, %vt : (tensor<8x3x3xf32>, tensor<8x3x2xf32>) -> tensor<8x3x2xf32>
  %ot = graph.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<8x3x2xf32>) -> tensor<3x8x2xf32>
  %m = graph.reshape %ot : (tensor<3x8x2xf32>) -> tensor<3x2x8xf32>
  %y = graph.matmul %m, %wo : (tensor<3x2x8xf32>, tensor<8x8xf32>) -> tensor<3x2x8xf32>
  %z = graph.softmax %y {axis = 2 : i64} : tensor<3x2x8xf32>
  %l = graph.reduce_sum %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<3x2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
