// --shard overrides the layout per parameter (REGEX=SPEC); one that cannot be met is an error
// naming it.
// Keeping w2 whole keeps w1's output features whole too (one class), so nothing is left to split.
// RUN: not shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2 shard=w2=replicated" 2>&1 | FileCheck %s --check-prefix=OVERRIDE
// RUN: not shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2 shard=w1=[{tp},{}]" 2>&1 | FileCheck %s --check-prefix=BAD
// OVERRIDE: error: --strategy tp=2: no parameter dimension can be split on tp (the largest, 'w1' dim 1 (size 8) is kept whole by --shard); every device of a tp group would compute the whole model
// BAD: error: --shard 'w1=[{tp},{}]': 'w1' dim 0 cannot be split on tp: op graph.softmax: softmax normalises over it
// A tp that splits nothing is refused, naming the largest dimension: 5 divides neither 4 nor
// 8, and padding 8 to 10 would leave the last device only padding.
// RUN: not shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=5" 2>&1 | FileCheck %s --check-prefix=NOTHING
// NOTHING: error: --strategy tp=5: no parameter dimension can be split on tp (the largest, 'w1' dim 1 (size 8): --strategy tp=5 does not divide its size 8 and padding it to 10 would leave a device only padding); every device of a tp group would compute the whole model
// At tp=3 the hidden features (8) are padded to 9 (TensorParallelPadding.h): both products and
// the relu keep the padding zero, so no mask is needed.
// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=3" 2>&1 | FileCheck %s --check-prefix=PAD3
// PAD3: %arg1: tensor<4x9xf32> {graph.param = "w1", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>, graph.tp_padding = array<i64: 1, 8>}
// PAD3-SAME: %arg2: tensor<9x4xf32> {graph.param = "w2", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>, graph.tp_padding = array<i64: 0, 8>}
// PAD3-SAME: "padded 8 to 9 along 'w1' dim 1: 0 operands given -inf at the padding (a softmax or maximum over it), 0 results zeroed there"
// PAD3-NOT: graph.where
func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %w1: tensor<4x8xf32> {graph.param = "w1"},
                   %w2: tensor<8x4xf32> {graph.param = "w2"}) -> (tensor<f32> {graph.output = "loss"}) {
  %n = graph.softmax %x {axis = 1 : i64} : tensor<2x4xf32>
  %h = graph.matmul %n, %w1 : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %r = graph.relu %h : tensor<2x8xf32>
  %y = graph.matmul %r, %w2 : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
