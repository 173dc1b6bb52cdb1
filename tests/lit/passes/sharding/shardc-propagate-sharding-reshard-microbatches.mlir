// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=2 micro-batches=2" -verify-diagnostics

// Microbatches see only their own rows in an op that needs the whole batch: refused in one
// line naming the op, rather than computing it per microbatch.
// expected-error @+1 {{--micro-batches 2: op graph.matmul needs the whole batch (it pairs blocks of the same dimension with each other (two of its factors are in it)); gradient accumulation would compute it per microbatch, not over the batch}}
func.func @forward(%x: tensor<4x6xf32> {graph.input = "x"}, %w: tensor<6x6xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  %t = graph.transpose %e {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %s = graph.matmul %e, %t : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
