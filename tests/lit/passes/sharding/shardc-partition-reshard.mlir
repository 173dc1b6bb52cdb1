// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" --shardc-partition -verify-diagnostics | FileCheck %s

// Resharding: where an op needs the batch whole, the partitioner gathers its operands there
// and keeps the rest of the program split.

// A contrastive loss: the logits pair every row with every other (x @ x^T). The towers stay
// split; the product gets the embeddings whole (all-gather on dp), and the loss over the
// whole logits is computed on every device (not a pending sum). (Computing the product in
// blocks of its rows would gather the other side and the 4x4 logits: more bytes than the
// 4x3 embeddings, so the whole operands are cheaper here; shardc-partition-reshard-blocks.mlir
// has the other case.)
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x3xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: graph.resharding = ["op graph.matmul: it pairs blocks of the same dimension with each other (two of its factors are in it); 96 bytes of its operands gathered whole on every rank (48 bytes sent per rank)"]
// CHECK: %[[E:.*]] = graph.matmul %arg0, %arg1 {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[N:.*]] = graph.softmax %[[E]] {axis = 1 : i64, graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : tensor<2x3xf32>
// CHECK: %[[F:.*]] = graph.reshape %[[N]] : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK: %[[G:.*]] = graph.all_gather %[[F]] on @dp {mesh_axes = array<i16: 0>} : (tensor<6xf32>) -> tensor<4x3xf32>
// CHECK: %[[T:.*]] = graph.transpose %[[N]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}], [0]]>], perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK: %[[TF:.*]] = graph.reshape %[[T]] : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK: %[[TG:.*]] = graph.all_gather %[[TF]] on @dp {mesh_axes = array<i16: 0>} : (tensor<6xf32>) -> tensor<2x3x2x1xf32>
// CHECK: %[[TT:.*]] = graph.transpose %[[TG]] {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x3x2x1xf32>) -> tensor<3x2x2x1xf32>
// CHECK: %[[TW:.*]] = graph.reshape %[[TT]] : (tensor<3x2x2x1xf32>) -> tensor<3x4xf32>
// CHECK: %[[S:.*]] = graph.matmul %[[G]], %[[TW]] {graph.whole_operands = "it pairs blocks of the same dimension with each other (two of its factors are in it)"} : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[L:.*]] = graph.reduce_sum %[[S]] {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
// CHECK: return %[[L]]
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %w: tensor<3x3xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %n = graph.softmax %e {axis = 1 : i64} : tensor<4x3xf32>
  %t = graph.transpose %n {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %s = graph.matmul %n, %t : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A normalisation over the batch (softmax along dim 0) after one along the rows: no dimension
// is free of an op that needs it whole, so the batch (dim 0) is split and the softmax over it
// gets its operand gathered (split -> whole); its result, which the next op wants split, is
// cut to this device's rows by a local slice (whole -> split, no communication). (Its 5
// columns do not divide by the 2 devices, so it cannot be computed in blocks of them.)
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x5xf32>
// CHECK: %[[A:.*]] = graph.softmax %arg0 {axis = 1 : i64, graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : tensor<2x5xf32>
// CHECK: %[[AF:.*]] = graph.reshape %[[A]] : (tensor<2x5xf32>) -> tensor<10xf32>
// CHECK: %[[AW:.*]] = graph.all_gather %[[AF]] on @dp {mesh_axes = array<i16: 0>} : (tensor<10xf32>) -> tensor<4x5xf32>
// CHECK: %[[B:.*]] = graph.softmax %[[AW]] {axis = 0 : i64, graph.whole_operands = "softmax normalises over it"} : tensor<4x5xf32>
// CHECK: %[[FLAT:.*]] = graph.reshape %[[B]] : (tensor<4x5xf32>) -> tensor<20xf32>
// CHECK: %[[MINE:.*]] = graph.shard_slice %[[FLAT]] on @dp {mesh_axes = array<i16: 0>} : (tensor<20xf32>) -> tensor<10xf32>
// CHECK: %[[BLOCK:.*]] = graph.reshape %[[MINE]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<10xf32>) -> tensor<2x5xf32>
// CHECK: graph.mul %[[BLOCK]], %arg0 {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK: graph.reduce_sum {{.*}}partial = sum[0]
func.func @forward(%x: tensor<4x5xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.softmax %x {axis = 1 : i64} : tensor<4x5xf32>
  %b = graph.softmax %a {axis = 0 : i64} : tensor<4x5xf32>
  %c = graph.mul %b, %x : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %l = graph.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A pooling that picks rows of the flattened [batch * seq, hidden] states by index (CLIP's
// text tower at each row's argmax): the indices may point anywhere in the batch, so the
// gather takes the states whole. It is computed in blocks of its indices (each device picks
// its own rows from the whole states), so the integer indices stay split and the pooled rows
// need no slicing. The row offsets (a constant that differs per row) are sliced from the
// whole constant.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x3xi64>
// CHECK-SAME: graph.resharding = ["op graph.gather: it pairs blocks of the same dimension with each other (two of its factors are in it); computed in blocks of its dimension of 4 instead: 120 bytes sent per rank (0 by all-to-all, 120 by all-gather), where gathering its operands whole would send 136"]
// CHECK: %[[HW:.*]] = graph.all_gather %{{.*}} on @dp {mesh_axes = array<i16: 0>} : (tensor<30xf32>) -> tensor<12x5xf32>
// CHECK: %[[C:.*]] = graph.constant dense<[0, 3, 6, 9]> : tensor<4xi64>
// CHECK: %[[CS:.*]] = graph.shard_slice %[[C]] on @dp {mesh_axes = array<i16: 0>} : (tensor<4xi64>) -> tensor<2xi64>
// CHECK: %[[CL:.*]] = graph.reshape %[[CS]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<2xi64>) -> tensor<2xi64>
// CHECK: %[[IDX:.*]] = graph.add %[[CL]], %{{.*}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
// CHECK-NOT: graph.all_gather
// CHECK: %[[P:.*]] = graph.gather %[[HW]], %[[IDX]] {axis = 0 : i64, graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<12x5xf32>, tensor<2xi64>) -> tensor<2x5xf32>
// CHECK: graph.tanh %[[P]]
// CHECK: graph.mul {{.*}} : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
// CHECK: graph.reduce_sum {{.*}}partial = sum[0]
func.func @forward(%ids: tensor<4x3xi64> {graph.input = "ids"}, %weight: tensor<4x1xf32> {graph.input = "weight"}, %table: tensor<7x5xf32> {graph.param = "table"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.gather %table, %ids {axis = 0 : i64} : (tensor<7x5xf32>, tensor<4x3xi64>) -> tensor<4x3x5xf32>
  %flat = graph.reshape %h : (tensor<4x3x5xf32>) -> tensor<12x5xf32>
  %pos = graph.arg_max %ids {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<4x3xi64>) -> tensor<4xi64>
  %rows = graph.constant dense<[0, 3, 6, 9]> : tensor<4xi64>
  %idx = graph.add %rows, %pos : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %pooled = graph.gather %flat, %idx {axis = 0 : i64} : (tensor<12x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
  %t = graph.tanh %pooled : tensor<4x5xf32>
  %u = graph.mul %t, %weight : (tensor<4x5xf32>, tensor<4x1xf32>) -> tensor<4x5xf32>
  %l = graph.reduce_sum %u {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A batch merged into the minor part of a dimension ([seq * batch], strided rows) is gathered
// within each of its groups, and sliced back the same way.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<3x2xf32>
// CHECK: %[[R:.*]] = graph.reshape %{{.*}} : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK: graph.all_gather {{.*}} : (tensor<6xf32>) -> tensor<2x3x2x1xf32>
// CHECK: graph.transpose {{.*}} {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x3x2x1xf32>) -> tensor<3x2x2x1xf32>
// CHECK: graph.reshape {{.*}} : (tensor<3x2x2x1xf32>) -> tensor<12xf32>
// CHECK: graph.softmax {{.*}}graph.whole_operands = "softmax normalises over it"{{.*}} : tensor<12xf32>
// CHECK: graph.reshape {{.*}} : (tensor<12xf32>) -> tensor<3x2x2x1xf32>
// CHECK: graph.transpose {{.*}} {perm = array<i64: 1, 0, 2, 3>} : (tensor<3x2x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK: graph.shard_slice {{.*}} on @dp {mesh_axes = array<i16: 0>} : (tensor<12xf32>) -> tensor<6xf32>
func.func @forward(%x: tensor<3x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.tanh %x : tensor<3x4xf32>
  %r = graph.reshape %a : (tensor<3x4xf32>) -> tensor<12xf32>
  %s = graph.softmax %r {axis = 0 : i64} : tensor<12xf32>
  %b = graph.reshape %s : (tensor<12xf32>) -> tensor<3x4xf32>
  %c = graph.mul %b, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %l = graph.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A constant whose rows differ cannot be one block of one program on every device: it is kept
// whole and each device slices its rows from it.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[C:.*]] = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<4x2xf32>
// CHECK: %[[F:.*]] = graph.reshape %[[C]] : (tensor<4x2xf32>) -> tensor<8xf32>
// CHECK: %[[S:.*]] = graph.shard_slice %[[F]] on @dp {mesh_axes = array<i16: 0>} : (tensor<8xf32>) -> tensor<4xf32>
// CHECK: %[[L:.*]] = graph.reshape %[[S]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<4xf32>) -> tensor<2x2xf32>
// CHECK: graph.add %arg0, %[[L]]
func.func @forward(%x: tensor<4x2xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %c = graph.constant dense<[[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [3.0, 4.0]]> : tensor<4x2xf32>
  %a = graph.add %x, %c : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %l = graph.reduce_sum %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Indices whose rows write into other rows (here each row into the next one): the scatter takes
// its operands whole (resharding) and its result is sliced to each device's rows.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x5xi64> {graph.input = "labels", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK: %[[S:.*]] = graph.scatter_nd {{.*}}graph.whole_operands = "scatter_nd writes where its index values say"{{.*}} -> tensor<4x5xi64>
// CHECK: %[[F:.*]] = graph.reshape %[[S]] : (tensor<4x5xi64>) -> tensor<20xi64>
// CHECK: graph.shard_slice %[[F]] on @dp {mesh_axes = array<i16: 0>} : (tensor<20xi64>) -> tensor<10xi64>
func.func @forward(%labels: tensor<4x5xi64> {graph.input = "labels"}, %w: tensor<16x8xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %zeros = graph.constant dense<0> : tensor<4x5xi64>
  %i = graph.constant dense<[[[1, 0]], [[2, 0]], [[3, 0]], [[0, 0]]]> : tensor<4x1x2xi64>
  %u = graph.constant dense<2> : tensor<4x1xi64>
  %s = graph.scatter_nd %zeros, %i, %u {reduction = "none"} : (tensor<4x5xi64>, tensor<4x1x2xi64>, tensor<4x1xi64>) -> tensor<4x5xi64>
  %m = graph.mul %s, %labels : (tensor<4x5xi64>, tensor<4x5xi64>) -> tensor<4x5xi64>
  %e = graph.gather %w, %m {axis = 0 : i64} : (tensor<16x8xf32>, tensor<4x5xi64>) -> tensor<4x5x8xf32>
  %l = graph.reduce_sum %e {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x5x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Two inputs joined only by the product that pairs their rows (the two towers of a contrastive
// loss): once the product is cut, each input's rows are a class of their own, both split on dp.
// An op with a factor in each (here every op between the product and the tower it feeds back
// into) would see only the blocks where the two splits meet, so it is cut too; nothing is ever
// split along two dimensions on one axis.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x6xf32> {graph.input = "a", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: %arg1: tensor<2x6xf32> {graph.input = "b", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-NOT: {{\[\[}}0], [0]]
// The product pairing the towers is computed in blocks of a's rows (OpenCLIP's local rows:
// this device's rows of a against all of b), the logits gathered for the ops after it.
// CHECK: graph.matmul {{.*}} : (tensor<2x6xf32>, tensor<6x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[S:.*]] = graph.all_gather {{.*}} : (tensor<8xf32>) -> tensor<4x4xf32>
// CHECK: %[[T:.*]] = graph.transpose %[[S]] {graph.whole_operands = "it pairs blocks of the batch with each other (two of its factors are split along it)"
// CHECK: %[[E:.*]] = graph.exp %[[T]] {graph.whole_operands = "it pairs blocks of the batch with each other (two of its factors are split along it)"
// The last product is computed in blocks of its rows: the exponentials are sliced to this
// device's rows, the other factor gathered, and its rows need no slicing after it.
// CHECK: graph.shard_slice {{.*}} : (tensor<16xf32>) -> tensor<8xf32>
// CHECK: %[[U:.*]] = graph.matmul %{{.*}}, %{{.*}} {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
// CHECK-NOT: {{\[\[}}0], [0]]
// CHECK: return
func.func @forward(%a: tensor<4x6xf32> {graph.input = "a"}, %b: tensor<4x6xf32> {graph.input = "b"}, %w: tensor<6x6xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %x = graph.matmul %a, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  %y = graph.matmul %b, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  %yt = graph.transpose %y {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %s = graph.matmul %x, %yt : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  %st = graph.transpose %s {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %e = graph.exp %st : tensor<4x4xf32>
  %u = graph.matmul %e, %y : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %v = graph.mul %u, %x : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %l = graph.reduce_sum %v {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
