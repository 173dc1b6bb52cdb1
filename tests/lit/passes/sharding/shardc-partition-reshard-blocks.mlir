// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=4" --shardc-partition | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" --shardc-partition | FileCheck %s --check-prefix=TWO

// Resharding in blocks of another dimension (passes/sharding/BlockedResharding.h): an op that
// needs the batch whole but treats another dimension independently is computed in blocks of
// that one, its operands and results moved between the two splits by all-to-all.

// A softmax over the batch (dim 0) of [8, 8] on 4 devices, after one over the rows (so the
// batch is dim 0): each device's [2, 8] rows are cut into 4 column blocks, brought to the
// front and exchanged (all_to_all: block j goes to device j), and what arrives (device r's
// rows of this device's columns, in device order) is already [8, 2] in row order: one view. The softmax runs on its
// 2 columns of every row, and the result goes back to rows the same way. Each exchange sends
// 3/4 of a device's 64 bytes, 96 bytes for both, where gathering the operand whole sends 192
// (and has every device compute the whole softmax).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x8xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: graph.resharding = ["op graph.softmax: softmax normalises over it; computed in blocks of its dimension of 8 instead: 96 bytes sent per rank (96 by all-to-all, 0 by all-gather), where gathering its operands whole would send 192"]
// CHECK: %[[A:.*]] = graph.softmax %arg0 {axis = 1 : i64, graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : tensor<2x8xf32>
// CHECK: %[[CUT:.*]] = graph.reshape %[[A]] : (tensor<2x8xf32>) -> tensor<2x4x2xf32>
// CHECK: %[[FRONT:.*]] = graph.transpose %[[CUT]] {perm = array<i64: 1, 0, 2>} : (tensor<2x4x2xf32>) -> tensor<4x2x2xf32>
// CHECK: %[[FLAT:.*]] = graph.reshape %[[FRONT]] : (tensor<4x2x2xf32>) -> tensor<16xf32>
// CHECK: %[[X:.*]] = graph.all_to_all %[[FLAT]] on @dp {mesh_axes = array<i16: 0>} : (tensor<16xf32>) -> tensor<16xf32>
// CHECK: %[[COLS:.*]] = graph.reshape %[[X]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}], [0]]>]} : (tensor<16xf32>) -> tensor<8x2xf32>
// CHECK-NOT: graph.all_gather
// CHECK: %[[B:.*]] = graph.softmax %[[COLS]] {axis = 0 : i64, graph.shardings = [#mesh.shard<@dp, {{\[\[}}], [0]]>]} : tensor<8x2xf32>
// CHECK: %[[BFLAT:.*]] = graph.reshape %[[B]] : (tensor<8x2xf32>) -> tensor<16xf32>
// CHECK: %[[Y:.*]] = graph.all_to_all %[[BFLAT]] on @dp {mesh_axes = array<i16: 0>} : (tensor<16xf32>) -> tensor<16xf32>
// CHECK: %[[YR:.*]] = graph.reshape %[[Y]] : (tensor<16xf32>) -> tensor<4x2x2xf32>
// CHECK: %[[BACK:.*]] = graph.transpose %[[YR]] {perm = array<i64: 1, 0, 2>} : (tensor<4x2x2xf32>) -> tensor<2x4x2xf32>
// CHECK: %[[ROWS:.*]] = graph.reshape %[[BACK]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<2x4x2xf32>) -> tensor<2x8xf32>
// CHECK: graph.mul %[[ROWS]], %arg0 {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: graph.reduce_sum {{.*}}partial = sum[0]
// On 2 devices the exchanges send as much as the gather (half a block each way), and the
// softmax still runs on half the columns.
// TWO-LABEL: func.func @forward(
// TWO-SAME: computed in blocks of its dimension of 8 instead: 128 bytes sent per rank (128 by all-to-all, 0 by all-gather), where gathering its operands whole would send 128
// TWO: graph.all_to_all {{.*}} : (tensor<32xf32>) -> tensor<32xf32>
// TWO: graph.softmax {{.*}}axis = 0 : i64{{.*}} : tensor<8x4xf32>
// TWO: graph.all_to_all {{.*}} : (tensor<32xf32>) -> tensor<32xf32>
func.func @forward(%x: tensor<8x8xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.softmax %x {axis = 1 : i64} : tensor<8x8xf32>
  %b = graph.softmax %a {axis = 0 : i64} : tensor<8x8xf32>
  %c = graph.mul %b, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %l = graph.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A contrastive product x @ x^T whose embeddings (8 wide) are wider than the batch (4): in
// blocks of its rows, each device multiplies its own rows by the other side gathered whole
// (OpenCLIP's local rows), and only the [4, 4] logits are gathered for the sum, fewer bytes
// than gathering both [4, 8] sides.
// TWO-LABEL: func.func @forward(
// TWO-SAME: %arg0: tensor<2x8xf32> {graph.input = "a", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// TWO-SAME: computed in blocks of its dimension of 4 instead: 96 bytes sent per rank (0 by all-to-all, 96 by all-gather), where gathering its operands whole would send 128
// TWO: %[[X:.*]] = graph.matmul %arg0, %arg1 {{.*}} -> tensor<2x8xf32>
// TWO: %[[T:.*]] = graph.transpose %[[X]] {{.*}} -> tensor<8x2xf32>
// TWO: graph.all_gather {{.*}} : (tensor<16xf32>) -> tensor<2x8x2x1xf32>
// TWO: %[[TW:.*]] = graph.reshape {{.*}} : (tensor<8x2x2x1xf32>) -> tensor<8x4xf32>
// TWO: %[[S:.*]] = graph.matmul %[[X]], %[[TW]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
// TWO: %[[SF:.*]] = graph.reshape %[[S]] : (tensor<2x4xf32>) -> tensor<8xf32>
// TWO: %[[SW:.*]] = graph.all_gather %[[SF]] on @dp {mesh_axes = array<i16: 0>} : (tensor<8xf32>) -> tensor<4x4xf32>
// TWO: graph.reduce_sum %[[SW]]
func.func @forward(%a: tensor<4x8xf32> {graph.input = "a"}, %w: tensor<8x8xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %x = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %s = graph.matmul %x, %t : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
