// A fused QKV projection cut by Split: the heads are a minor part of its 3h features, so
// propagation splits them strided (3 groups, each cut on tp) through the Split, the bias add
// and the matmul to the weight and bias, and the partitioner gives each device its heads of
// Q, K and V: the weight 8x24 becomes 8x12 with graph.split_groups, the Split's sizes become
// the local 4, 4, 4, and its gradient (a concat) joins local parts.
// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-propagate-sharding="ranks=1 tp=2" --shardc-partition | FileCheck %s
// --shard names a strided split as Nx{tp}; one no Split cuts, or a plain split of the fused
// features, is an error naming the parameter.
// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-propagate-sharding="ranks=1 tp=2 shard=attn.weight=replicated" | FileCheck %s --check-prefix=KEEP
// RUN: not shardc-opt %s -split-input-file --shardc-build-train-step --shardc-propagate-sharding="ranks=1 tp=2 shard=attn.weight=[{},2x{tp}]" 2>&1 | FileCheck %s --check-prefix=GROUPS
// RUN: not shardc-opt %s -split-input-file --shardc-build-train-step --shardc-propagate-sharding="ranks=1 tp=2 shard=attn.weight=[{},{tp}]" 2>&1 | FileCheck %s --check-prefix=WHOLE
// KEEP: tensor<8x24xf32> {graph.param = "attn.weight"}
// KEEP-SAME: "replicated 'proj.weight' dim 0 (size 8): --shard keeps it whole"
// GROUPS: error: --shard 'attn.weight=[{},2x{tp}]': 'attn.weight' dim 1 has no part in 2 groups (no equal Split or Concat cuts it so)
// WHOLE: error: --shard 'attn.weight=[{},{tp}]': 'attn.weight' dim 1 cannot be split on tp: op graph.split: split cuts along it
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tensor<8x12xf32> {graph.param = "attn.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>, graph.split_groups = array<i64: 1, 3>}
// CHECK-SAME: tensor<12xf32> {graph.param = "attn.bias", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>, graph.split_groups = array<i64: 3>}
// CHECK-SAME: tensor<4x8xf32> {graph.param = "proj.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK-SAME: graph.tp_layout = [
// CHECK-SAME: "replicated 'attn.weight' dim 1 (size 24): op graph.split: split cuts along it"
// CHECK-SAME: "split on tp 'proj.weight' dim 0 (size 8): 280 parameter elements, partial sums of 64 elements per step"
// CHECK: graph.split {{.*}} sizes = array<i64: 4, 4, 4>} : (tensor<2x4x12xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>)
// CHECK: graph.concat {{.*}} graph.split_groups = [array<i64: 1, 1, 3>]} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x12xf32>
func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"},
                   %wa: tensor<8x24xf32> {graph.param = "attn.weight"}, %ba: tensor<24xf32> {graph.param = "attn.bias"},
                   %wo: tensor<8x8xf32> {graph.param = "proj.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %m = graph.matmul %x, %wa : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %a = graph.add %m, %ba : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  %q, %k, %v = graph.split %a {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %q4 = graph.reshape %q : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %k4 = graph.reshape %k : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %v4 = graph.reshape %v : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %qt = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x2x4xf32>
  %vt = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %s = graph.matmul %qt, %kt : (tensor<2x4x4x2xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x4x4xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<2x4x4x4xf32>
  %o = graph.matmul %p, %vt : (tensor<2x4x4x4xf32>, tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %r = graph.reshape %ot : (tensor<2x4x4x2xf32>) -> tensor<2x4x8xf32>
  %y = graph.matmul %r, %wo : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A training dropout on the fused tensor (before the Split) draws its mask from each
// element's position in the whole tensor, which a strided block cannot give: the heads stay
// whole, and the layout says why.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tensor<8x24xf32> {graph.param = "attn.weight"}
// CHECK-SAME: graph.tp_layout = [
// CHECK-SAME: "replicated 'proj.weight' dim 0 (size 8): op graph.dropout: its kernel reads each element's position (a strided split has no single block offset)"
func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"},
                   %wa: tensor<8x24xf32> {graph.param = "attn.weight"}, %ba: tensor<24xf32> {graph.param = "attn.bias"},
                   %wo: tensor<8x8xf32> {graph.param = "proj.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %m = graph.matmul %x, %wa : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %a = graph.add %m, %ba : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  %d, %dm = graph.dropout %a {ratio = 0.1 : f32, training} : (tensor<2x4x24xf32>) -> (tensor<2x4x24xf32>, tensor<2x4x24xi1>)
  %q, %k, %v = graph.split %d {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %q4 = graph.reshape %q : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %k4 = graph.reshape %k : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %v4 = graph.reshape %v : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %qt = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x2x4xf32>
  %vt = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %s = graph.matmul %qt, %kt : (tensor<2x4x4x2xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x4x4xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<2x4x4x4xf32>
  %o = graph.matmul %p, %vt : (tensor<2x4x4x4xf32>, tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %r = graph.reshape %ot : (tensor<2x4x4x2xf32>) -> tensor<2x4x8xf32>
  %y = graph.matmul %r, %wo : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
