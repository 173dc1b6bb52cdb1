// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2" --shardc-partition | FileCheck %s
// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=2 tp=2" --shardc-partition | FileCheck %s --check-prefix=DP

// Rows that mix (a softmax over dim 0, as PyTorch's sequence-first attention folds the batch
// into its heads): no batch dimension. With one data-parallel device tensor parallelism needs
// none (every device of the tp group takes the whole batch): the hidden features of the
// product pair are split on tp, the batch size is the rows of the input (4), and the layout
// says why nothing is split on dp. With 2 data-parallel devices the batch is split and the
// softmax over it takes its operand whole (all-gathered on dp: resharding); what follows it is
// whole on dp and split on tp as before.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<4x6xf32> {graph.input = "x"}
// CHECK-SAME: %arg1: tensor<6x4xf32> {graph.param = "w1", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// CHECK-SAME: %arg2: tensor<4x6xf32> {graph.param = "w2", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK-SAME: graph.batch_size = 4 : i64
// CHECK-SAME: graph.tp_layout = ["no batch dimension to split (dim 0 (size 4): op graph.softmax: softmax normalises over it; dim 1 (size 6): 'w1' (a parameter or state, the same on every device) has it); with dp=1 every device of the tp group takes the whole batch"
// CHECK: %[[P:.*]] = graph.matmul {{.*}} : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: mesh.all_reduce %[[P]] on @mesh mesh_axes = [1]
// DP-LABEL: func.func @forward(
// DP-SAME: %arg0: tensor<2x6xf32> {graph.input = "x", graph.sharding = #mesh.shard<@mesh, {{\[\[}}0]]>}
// DP: %[[G:.*]] = graph.all_gather %{{.*}} on @mesh {mesh_axes = array<i16: 0>} : (tensor<12xf32>) -> tensor<4x6xf32>
// DP: graph.softmax %[[G]] {axis = 0 : i64, graph.whole_operands = "softmax normalises over it"}
// DP: graph.matmul {{.*}} : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
// DP: mesh.all_reduce {{.*}} mesh_axes = [1]
func.func @forward(%x: tensor<4x6xf32> {graph.input = "x"}, %w1: tensor<6x8xf32> {graph.param = "w1"},
                   %w2: tensor<8x6xf32> {graph.param = "w2"}) -> tensor<f32> {
  %s = graph.softmax %x {axis = 0 : i64} : tensor<4x6xf32>
  %h = graph.matmul %s, %w1 : (tensor<4x6xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
  %a = graph.relu %h : tensor<4x8xf32>
  %p = graph.matmul %a, %w2 : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %t = graph.softmax %p {axis = 1 : i64} : tensor<4x6xf32>
  %l = graph.reduce_sum %t {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
