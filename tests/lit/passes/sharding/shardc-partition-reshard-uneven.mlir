// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" --shardc-partition="local-rows=3" -verify-diagnostics

// Resharding gathers and slices equal blocks: with devices holding different numbers of rows
// (3 of 4 here), an op that needs the batch whole is refused in one line naming it.
func.func @forward(%x: tensor<4x6xf32> {graph.input = "x"}, %w: tensor<6x6xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  %t = graph.transpose %e {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  // expected-error @+1 {{op graph.matmul needs the batch whole (it pairs blocks of the same dimension with each other (two of its factors are in it)), which is resharded only from an even split: 4 rows do not divide by 2 devices}}
  %s = graph.matmul %e, %t : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The same for a constant whose rows differ, which an even split slices from the whole.
func.func @forward(%x: tensor<4x2xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  // expected-error @+1 {{op graph.constant needs the batch whole (its blocks hold different values), which is resharded only from an even split: 4 rows do not divide by 2 devices}}
  %c = graph.constant dense<[[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [3.0, 4.0]]> : tensor<4x2xf32>
  %a = graph.add %x, %c : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %l = graph.reduce_sum %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
