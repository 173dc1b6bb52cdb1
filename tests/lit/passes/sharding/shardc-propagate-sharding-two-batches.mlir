// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=2 micro-batches=2" | FileCheck %s

// Two inputs whose rows never meet (two losses added): each input's batch is a class of its
// own, both split on dp, with nothing to reshard, so microbatches are fine too.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<8x6xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: %arg1: tensor<8x5xf32> {graph.input = "y", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: graph.batch_size = 8 : i64, graph.resharding = []
// CHECK-NOT: graph.whole_operands
// CHECK: return
func.func @forward(%x: tensor<8x6xf32> {graph.input = "x"}, %y: tensor<8x5xf32> {graph.input = "y"},
                   %w: tensor<6x3xf32> {graph.param = "w"}, %v: tensor<5x3xf32> {graph.param = "v"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.matmul %x, %w : (tensor<8x6xf32>, tensor<6x3xf32>) -> tensor<8x3xf32>
  %b = graph.matmul %y, %v : (tensor<8x5xf32>, tensor<5x3xf32>) -> tensor<8x3xf32>
  %la = graph.reduce_sum %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x3xf32>) -> tensor<f32>
  %lb = graph.reduce_sum %b {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x3xf32>) -> tensor<f32>
  %l = graph.add %la, %lb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
