// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=1 tp=2" --shardc-partition | FileCheck %s

// Vocab-parallel embedding and cross-entropy with tied input/output embeddings, on a 1 x 2
// mesh (vocab 64: 32 rows per device). The table is split along its rows (one tensor, still
// tied). The lookup picks the rows of the device's block (graph.index_block: mesh axis 1,
// block 32 of 64) and leaves a pending sum, all-reduced once. The logits are the device's
// columns and are never gathered: the loss is rewritten into a row maximum (each device's,
// all-gathered over tp, then the maximum of those), a sum of exponentials (all-reduced) and a
// nll_loss that picks the labels of the device's block, whose pending sum is all-reduced.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<32x16xf32> {graph.param = "wte.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK: %[[E:.*]] = graph.gather %arg2, %arg0 {axis = 0 : i64, graph.index_block = array<i64: 1, 32, 64>, graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0]], partial = sum[1]>]} : (tensor<32x16xf32>, tensor<4x8xi64>) -> tensor<4x8x16xf32>
// CHECK-NEXT: mesh.all_reduce %[[E]] on @mesh mesh_axes = [1] {{.*}}: tensor<4x8x16xf32>
// CHECK: %[[LOGITS:.*]] = graph.matmul {{.*}} : (tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<32x32xf32>
// CHECK-NEXT: %[[MAX:.*]] = graph.reduce_max %[[LOGITS]] {axes = array<i64: 1>{{.*}}keepdims = true} : (tensor<32x32xf32>) -> tensor<32x1xf32>
// CHECK-NEXT: %[[FLAT:.*]] = graph.reshape %[[MAX]] : (tensor<32x1xf32>) -> tensor<32xf32>
// CHECK-NEXT: %[[MAXES:.*]] = graph.all_gather %[[FLAT]] on @mesh {mesh_axes = array<i16: 1>} : (tensor<32xf32>) -> tensor<2x32x1xf32>
// CHECK-NEXT: %[[GMAX:.*]] = graph.reduce_max %[[MAXES]] {axes = array<i64: 0>, keepdims = false} : (tensor<2x32x1xf32>) -> tensor<32x1xf32>
// CHECK-NEXT: graph.sub %[[LOGITS]], %[[GMAX]]
// CHECK-NEXT: graph.exp
// CHECK-NEXT: %[[SUM:.*]] = graph.reduce_sum {{.*}}partial = sum[1]>]
// CHECK-NEXT: %[[GSUM:.*]] = mesh.all_reduce %[[SUM]] on @mesh mesh_axes = [1] {{.*}}: tensor<32x1xf32>
// CHECK-NEXT: %[[LOG:.*]] = graph.log %[[GSUM]]
// CHECK-NEXT: %[[LSE:.*]] = graph.add %[[LOG]], %[[GMAX]]
// CHECK-NEXT: %[[LOGPROB:.*]] = graph.sub %[[LOGITS]], %[[LSE]] {{.*}} -> tensor<32x32xf32>
// CHECK-NEXT: %[[LOSS:.*]] = graph.nll_loss %[[LOGPROB]], %arg1 {graph.index_block = array<i64: 1, 32, 64>, graph.shardings = [#mesh.shard<@mesh, [], partial = sum[0, 1]>], reduction = "sum"}
// CHECK-NEXT: %[[TOTAL:.*]] = mesh.all_reduce %[[LOSS]] on @mesh mesh_axes = [1]
// CHECK-NEXT: return %[[TOTAL]]
// CHECK-NOT: softmax_cross_entropy_loss
func.func @forward(%ids: tensor<4x8xi64> {graph.input = "ids"}, %labels: tensor<32xi64> {graph.input = "labels"},
                   %wte: tensor<64x16xf32> {graph.param = "wte.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.gather %wte, %ids {axis = 0 : i64} : (tensor<64x16xf32>, tensor<4x8xi64>) -> tensor<4x8x16xf32>
  %g = graph.gelu %e {approximate = "none"} : tensor<4x8x16xf32>
  %h = graph.reshape %g : (tensor<4x8x16xf32>) -> tensor<32x16xf32>
  %wt = graph.transpose %wte {perm = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32>
  %logits = graph.matmul %h, %wt : (tensor<32x16xf32>, tensor<16x64xf32>) -> tensor<32x64xf32>
  %loss, %lp = graph.softmax_cross_entropy_loss %logits, %labels {reduction = "sum"} : (tensor<32x64xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<32x64xf32>)
  return %loss : tensor<f32>
}

// -----

// Lookup tables that only a gather reads split no computation: one is split only when it is
// larger than the partial sums its lookups would leave (the word embedding here: 64 x 16
// elements against 4 x 8 x 16), never otherwise (the position table: 8 x 16 against 1 x 8 x 16).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<32x16xf32> {graph.param = "word.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK-SAME: tensor<8x16xf32> {graph.param = "position.weight"}
// CHECK-SAME: "replicated 'position.weight' dim 0 (size 8): a lookup table of 128 parameter elements, no more than the 128 elements of partial sums per step its split would cost"
// CHECK-SAME: "split on tp 'word.weight' dim 0 (size 64): 1024 parameter elements, partial sums of 512 elements per step"
func.func @forward(%ids: tensor<4x8xi64> {graph.input = "ids"},
                   %word: tensor<64x16xf32> {graph.param = "word.weight"},
                   %pos: tensor<8x16xf32> {graph.param = "position.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %positions = graph.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %w = graph.gather %word, %ids {axis = 0 : i64} : (tensor<64x16xf32>, tensor<4x8xi64>) -> tensor<4x8x16xf32>
  %p = graph.gather %pos, %positions {axis = 0 : i64} : (tensor<8x16xf32>, tensor<1x8xi64>) -> tensor<1x8x16xf32>
  %x = graph.add %w, %p : (tensor<4x8x16xf32>, tensor<1x8x16xf32>) -> tensor<4x8x16xf32>
  %s = graph.softmax %x {axis = 2 : i64} : tensor<4x8x16xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x8x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
