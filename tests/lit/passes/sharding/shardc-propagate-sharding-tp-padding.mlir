// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=1 tp=4" | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=1 tp=4" --shardc-partition | FileCheck %s --check-prefix=LOCAL

// A tied embedding and output projection whose vocabulary (10) tp=4 does not divide: the
// class is padded to 12 (TensorParallelPadding.h). The table's type is padded and the
// argument records its size before padding; the scores get -inf at the padding before the
// cross-entropy's softmax; its log_prob (-inf there) is zeroed there before the sum that reads
// it. The
// mask is one constant, shaped to broadcast along the vocabulary.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg2: tensor<12x8xf32> {graph.param = "wte", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>, graph.tp_padding = array<i64: 0, 10>}
// CHECK-SAME: "split on tp 'wte' dim 0 (size 10): {{.*}}, padded to 12 (2 entries of padding on the last tp rank, kept zero and never saved)"
// CHECK-SAME: "padded 10 to 12 along 'wte' dim 0: 1 operands given -inf at the padding (a softmax or maximum over it), 1 results zeroed there"
// CHECK: %[[MASK:.*]] = graph.constant {{.*}}dense<{{\[\[}}false, false, false, false, false, false, false, false, false, false, true, true]]> : tensor<1x12xi1>
// CHECK: graph.gather %arg2, %arg0 {{.*}}: (tensor<12x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
// CHECK: %[[Z:.*]] = graph.reshape {{.*}}: (tensor<2x3x12xf32>) -> tensor<6x12xf32>
// CHECK: %[[NEGINF:.*]] = graph.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[MASKED:.*]] = graph.where %[[MASK]], %[[NEGINF]], %[[Z]]
// CHECK: %loss, %log_prob = graph.softmax_cross_entropy_loss %[[MASKED]], %arg1
// CHECK: %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[LP:.*]] = graph.where %[[MASK]], %[[ZERO]], %log_prob
// CHECK: graph.reduce_sum %[[LP]]
//
// Partitioned: every device holds 3 rows of the table; the mask is sliced per device from the
// whole one, and the vocabulary-parallel cross-entropy reads its index block of 12.
// LOCAL-LABEL: func.func @forward(
// LOCAL-SAME: %arg2: tensor<3x8xf32> {graph.param = "wte", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>, graph.tp_padding = array<i64: 0, 10>}
// LOCAL: graph.shard_slice {{.*}} : (tensor<12xi1>) -> tensor<3xi1>
// LOCAL: graph.gather %arg2, %arg0 {{{.*}}graph.index_block = array<i64: 1, 3, 12>
// LOCAL: graph.where {{.*}} : (tensor<1x3xi1>, tensor<f32>, tensor<6x3xf32>) -> tensor<6x3xf32>
// LOCAL: graph.nll_loss {{.*}}graph.index_block = array<i64: 1, 3, 12>
func.func @forward(%ids: tensor<2x3xi64> {graph.input = "ids"}, %y: tensor<6xi64> {graph.input = "y"},
                   %wte: tensor<10x8xf32> {graph.param = "wte"}, %g: tensor<8xf32> {graph.param = "ln.weight"},
                   %b: tensor<8xf32> {graph.param = "ln.bias"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.gather %wte, %ids {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  %n, %m, %s = graph.layer_norm %e, %g, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  %t = graph.transpose %wte {perm = array<i64: 1, 0>} : (tensor<10x8xf32>) -> tensor<8x10xf32>
  %z = graph.matmul %n, %t : (tensor<2x3x8xf32>, tensor<8x10xf32>) -> tensor<2x3x10xf32>
  %z2 = graph.reshape %z : (tensor<2x3x10xf32>) -> tensor<6x10xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %z2, %y {reduction = "sum"} : (tensor<6x10xf32>, tensor<6xi64>) -> (tensor<f32>, tensor<6x10xf32>)
  %all = graph.reduce_sum %lp {axes = array<i64: 0, 1>, keepdims = false} : (tensor<6x10xf32>) -> tensor<f32>
  %r = graph.add %l, %all : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A mean over the vocabulary would count the padding: the class stays whole, and the layout
// says why.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg1: tensor<10x8xf32> {graph.param = "w"}
// CHECK-SAME: "replicated 'w' dim 0 (size 10): --strategy tp=4 does not divide its size 10 and padding it would change the result: op graph.reduce_mean averages over it, and the padding would count"
// CHECK-NOT: graph.tp_padding
func.func @forward(%x: tensor<4x8xf32> {graph.input = "x"}, %w: tensor<10x8xf32> {graph.param = "w"},
                   %v: tensor<8x16xf32> {graph.param = "v"}) -> (tensor<f32> {graph.output = "loss"}) {
  %t = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<10x8xf32>) -> tensor<8x10xf32>
  %o = graph.matmul %x, %t : (tensor<4x8xf32>, tensor<8x10xf32>) -> tensor<4x10xf32>
  %r = graph.reduce_mean %o {axes = array<i64: 1>, keepdims = false} : (tensor<4x10xf32>) -> tensor<4xf32>
  %u = graph.matmul %x, %v : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = graph.reduce_sum %u {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x16xf32>) -> tensor<f32>
  %q = graph.reduce_sum %r {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %l = graph.add %s, %q : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An expand along the padded dimension writes its operand's values into the padding (here
// x's features, broadcast over the 7 rows of w): its result is zeroed there before the product
// with w and the sum that reads it; the product (w holds the padding) keeps zeros.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg1: tensor<8x4xf32> {graph.param = "w", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>, graph.tp_padding = array<i64: 0, 7>}
// CHECK-SAME: "padded 7 to 8 along 'w' dim 0: 0 operands given -inf at the padding (a softmax or maximum over it), 1 results zeroed there"
// CHECK: %[[MASK:.*]] = graph.constant {{.*}}dense<{{\[\[\[}}false], [false], [false], [false], [false], [false], [false], [true]]]> : tensor<1x8x1xi1>
// CHECK: %[[E:.*]] = graph.expand %{{.*}} -> tensor<2x8x4xf32>
// CHECK: %[[Z:.*]] = graph.where %[[MASK]], %{{.*}}, %[[E]]
// CHECK: graph.mul %[[Z]], %arg1
func.func @forward(%x: tensor<2x1x4xf32> {graph.input = "x"}, %w: tensor<7x4xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.expand %x : (tensor<2x1x4xf32>) -> tensor<2x7x4xf32>
  %p = graph.mul %e, %w : (tensor<2x7x4xf32>, tensor<7x4xf32>) -> tensor<2x7x4xf32>
  %l = graph.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x7x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
