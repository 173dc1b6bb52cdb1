// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" -verify-diagnostics | FileCheck %s

// An attention-like block with the batch baked into its reshapes (a static export): the
// batch (dim 0) is split through reshape, transpose and the batched matmul; the heads and the
// softmax axis are not.
// CHECK: mesh.mesh @dp(shape = 2) {graph.axis_names = ["dp"]}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<4x6x8xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: %arg1: tensor<4x6xi64> {graph.input = "y", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: %arg2: tensor<8x8xf32> {graph.param = "w"})
// CHECK-SAME: attributes {graph.batch_size = 4 : i64}
// CHECK: graph.reshape {{.*}}graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]{{.*}}-> tensor<4x6x2x4xf32>
// CHECK: graph.transpose {{.*}}graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>], perm = array<i64: 0, 2, 1, 3>
// CHECK: graph.softmax {{.*}}{axis = 3 : i64, graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]}
// CHECK: graph.reshape {{.*}}graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]{{.*}}-> tensor<24x8xf32>
// The loss reduces over the batch (no split of its own); the log-probabilities keep the rows.
// CHECK: graph.softmax_cross_entropy_loss {{.*}}graph.shardings = [unit, #mesh.shard<@dp, {{\[\[}}0]]>]
func.func @forward(%x: tensor<4x6x8xf32> {graph.input = "x"}, %y: tensor<4x6xi64> {graph.input = "y"},
                   %w: tensor<8x8xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %q = graph.matmul %x, %w : (tensor<4x6x8xf32>, tensor<8x8xf32>) -> tensor<4x6x8xf32>
  %h = graph.reshape %q : (tensor<4x6x8xf32>) -> tensor<4x6x2x4xf32>
  %t = graph.transpose %h {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x6x2x4xf32>) -> tensor<4x2x6x4xf32>
  %k = graph.transpose %h {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x6x2x4xf32>) -> tensor<4x2x4x6xf32>
  %s = graph.matmul %t, %k : (tensor<4x2x6x4xf32>, tensor<4x2x4x6xf32>) -> tensor<4x2x6x6xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<4x2x6x6xf32>
  %o = graph.matmul %p, %t : (tensor<4x2x6x6xf32>, tensor<4x2x6x4xf32>) -> tensor<4x2x6x4xf32>
  %b = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x2x6x4xf32>) -> tensor<4x6x2x4xf32>
  %m = graph.reshape %b : (tensor<4x6x2x4xf32>) -> tensor<24x8xf32>
  %yy = graph.reshape %y : (tensor<4x6xi64>) -> tensor<24xi64>
  %l, %lp = graph.softmax_cross_entropy_loss %m, %yy {reduction = "sum"} : (tensor<24x8xf32>, tensor<24xi64>) -> (tensor<f32>, tensor<24x8xf32>)
  return %l : tensor<f32>
}

// -----

// Sequence-first (nn.Transformer's default): attention mixes dim 0, so the batch is dim 1.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<6x4x8xf32> {graph.input = "src", graph.sharding = #mesh.shard<@dp, {{\[\[}}], [0]]>}
// CHECK: graph.transpose {{.*}}graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>], perm = array<i64: 1, 0, 2>
// CHECK: graph.softmax {{.*}}{axis = 2 : i64, graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]}
func.func @forward(%x: tensor<6x4x8xf32> {graph.input = "src"}) -> (tensor<f32> {graph.output = "loss"}) {
  %t = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<6x4x8xf32>) -> tensor<4x6x8xf32>
  %k = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<6x4x8xf32>) -> tensor<4x8x6xf32>
  %s = graph.matmul %t, %k : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %p = graph.softmax %s {axis = 2 : i64} : tensor<4x6x6xf32>
  %l = graph.reduce_mean %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x6x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A batch-wide normalisation: the mean over the batch is a pending sum that the partitioner
// all-reduces before it is subtracted; the batch is still found.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK: graph.reduce_mean %arg0 {axes = array<i64: 0>, keepdims = true}
// CHECK: graph.sub {{.*}}graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]
func.func @forward(%x: tensor<8x3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %m = graph.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : (tensor<8x3xf32>) -> tensor<1x3xf32>
  %c = graph.sub %x, %m : (tensor<8x3xf32>, tensor<1x3xf32>) -> tensor<8x3xf32>
  %q = graph.mul %c, %c : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %l = graph.reduce_sum %q {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// No dimension along which rows never interact: the batch (dim 0) is split all the same, and
// the op that needs it whole takes its operand whole (graph.whole_operands, with why; the
// partitioner gathers it there). The function lists it for plan.txt. What the op yields no
// longer meets the batch: it stays whole.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<4x6xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: graph.resharding = ["op graph.softmax: softmax normalises over it; 96 bytes of its operands gathered whole on every rank"]
// CHECK: graph.softmax %arg0 {axis = 0 : i64, graph.whole_operands = "softmax normalises over it"}
// CHECK: graph.softmax %{{.*}} {axis = 1 : i64} : tensor<4x6xf32>
func.func @forward(%x: tensor<4x6xf32> {graph.input = "x"}) -> (tensor<4x6xf32> {graph.output = "y"}) {
  %a = graph.softmax %x {axis = 0 : i64} : tensor<4x6xf32>
  %b = graph.softmax %a {axis = 1 : i64} : tensor<4x6xf32>
  return %b : tensor<4x6xf32>
}

// -----

// Rows that interact through a product of the batch with itself (a contrastive loss's logits):
// a device would only compute the pairs of its own rows, so the product takes both operands
// whole; the tower before it stays split. (The features, dim 1, are a dimension of the
// parameter: never the batch.)
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>
// CHECK-SAME: graph.batch_size = 4 : i64
// CHECK: graph.softmax {{.*}}graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]
// CHECK: graph.matmul {{.*}}graph.whole_operands = "it pairs blocks of the same dimension with each other (two of its factors are in it)"
func.func @forward(%x: tensor<4x6xf32> {graph.input = "x"}, %w: tensor<6x6xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  %n = graph.softmax %e {axis = 1 : i64} : tensor<4x6xf32>
  %t = graph.transpose %n {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %s = graph.matmul %n, %t : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// What resharding cannot mend: every dimension of the input is also one of a parameter (the
// same on every device), so no split of the batch keeps the program's meaning. Refused, naming
// why for each candidate.
// expected-error @+1 {{cannot split the batch across 2 data-parallel devices: no dimension of input 'x' is one along which rows never interact: dim 0 (size 4): 'p' (a parameter or state, the same on every device) has it; dim 1 (size 6): 'p' (a parameter or state, the same on every device) has it}}
func.func @forward(%x: tensor<4x6xf32> {graph.input = "x"}, %p: tensor<4x6xf32> {graph.param = "p"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.mul %x, %p : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %l = graph.reduce_sum %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
