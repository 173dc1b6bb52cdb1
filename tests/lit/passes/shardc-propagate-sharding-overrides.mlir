// --shard overrides the layout per parameter (REGEX=SPEC); one that cannot be met is an error
// naming it.
// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2 shard=w2=replicated" | FileCheck %s --check-prefix=OVERRIDE
// RUN: not shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2 shard=w1=[{tp},{}]" 2>&1 | FileCheck %s --check-prefix=BAD
// OVERRIDE: "replicated 'w1' dim 1 (size 8): --shard keeps it whole"
// BAD: error: --shard 'w1=[{tp},{}]': 'w1' dim 0 cannot be split on tp: op graph.softmax: softmax normalises over it
func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %w1: tensor<4x8xf32> {graph.param = "w1"},
                   %w2: tensor<8x4xf32> {graph.param = "w2"}) -> (tensor<f32> {graph.output = "loss"}) {
  %n = graph.softmax %x {axis = 1 : i64} : tensor<2x4xf32>
  %h = graph.matmul %n, %w1 : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %r = graph.relu %h : tensor<2x8xf32>
  %y = graph.matmul %r, %w2 : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
