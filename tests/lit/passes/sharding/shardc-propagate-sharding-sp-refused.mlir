// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2 sp=1" -verify-diagnostics

// Sequence parallelism with nothing to split: tp=2 divides neither the sequence (7) nor the
// model dimension (5), so no region of ops between the tensor-parallel blocks can be cut into
// blocks on tp. Refused in one line rather than run as plain tensor parallelism.
// expected-error @+1 {{--strategy sp=1: no activation between the tensor-parallel blocks can be split on tp: no region of ops that compute blocks of a dimension tp=2 divides is entered by a row-parallel product's partial sum}}
func.func @forward(%x: tensor<4x7x5xf32> {graph.input = "x"}, %w1: tensor<5x8xf32> {graph.param = "w1"},
                   %w2: tensor<8x5xf32> {graph.param = "w2"}) -> tensor<f32> {
  %h = graph.matmul %x, %w1 : (tensor<4x7x5xf32>, tensor<5x8xf32>) -> tensor<4x7x8xf32>
  %a = graph.relu %h : tensor<4x7x8xf32>
  %p = graph.matmul %a, %w2 : (tensor<4x7x8xf32>, tensor<8x5xf32>) -> tensor<4x7x5xf32>
  %r = graph.add %x, %p : (tensor<4x7x5xf32>, tensor<4x7x5xf32>) -> tensor<4x7x5xf32>
  %l = graph.reduce_sum %r {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x7x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
