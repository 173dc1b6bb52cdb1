// RUN: shardc-opt %s --shardc-propagate-sharding="ranks=1 tp=2 sp=1" --shardc-partition | FileCheck %s

// Sequence parallelism on a 1 x 2 mesh: two column -> row parallel blocks (fc1/fc2, fc3/fc4)
// with a residual add and a LayerNorm between them. The ops between the blocks compute blocks
// of the sequence (dim 1, 8 -> 4 per device; graph.sequence_factor names the split factor):
// the row-parallel products' pending sums enter by reduce-scatters (the blocks of dim 1 are
// brought to the front first, [4, 2, 4, 16] -> [2, 4, 4, 16], so each device's contiguous
// shard is its block), the replicated input by a local slice, and the norm's output leaves
// for fc3 by one all-gather. No all-reduce of an activation is left; the loss's sum over the
// sequence blocks is a pending sum over tp.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: graph.tp_layout = [{{.*}}"sequence-parallel on tp dim 1 of input 'x' (size 8): 4 ops compute blocks of it (regions: 1, activation elements split: 1600); partial sums reduce-scattered in place of all-reduces: 2 (1024 elements), values all-gathered: 1 (512 elements), replicated values sliced: 1"
// CHECK: %[[XT:.*]] = graph.transpose {{.*}} : (tensor<4x2x4x16xf32>) -> tensor<2x4x4x16xf32>
// CHECK-NEXT: %[[XF:.*]] = graph.reshape %[[XT]] : (tensor<2x4x4x16xf32>) -> tensor<512xf32>
// CHECK-NEXT: %[[XS:.*]] = graph.shard_slice %[[XF]] on @mesh {mesh_axes = array<i16: 1>} : (tensor<512xf32>) -> tensor<256xf32>
// CHECK-NEXT: %[[X:.*]] = graph.reshape %[[XS]] {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0], [1]]>]} : (tensor<256xf32>) -> tensor<4x4x16xf32>
// CHECK: %[[P1:.*]] = graph.matmul {{.*}}partial = sum[1]>]} : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
// CHECK-NEXT: graph.reshape %[[P1]] : (tensor<4x8x16xf32>) -> tensor<4x2x4x16xf32>
// CHECK-NEXT: graph.transpose
// CHECK-NEXT: %[[P1F:.*]] = graph.reshape
// CHECK-NEXT: %[[P1S:.*]] = graph.reduce_scatter %[[P1F]] on @mesh {mesh_axes = array<i16: 1>} : (tensor<512xf32>) -> tensor<256xf32>
// CHECK-NEXT: %[[P1B:.*]] = graph.reshape %[[P1S]] {{.*}} -> tensor<4x4x16xf32>
// CHECK-NEXT: %[[R1:.*]] = graph.add %[[X]], %[[P1B]] {graph.sequence_factor = 1 : i64, graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0], [1]]>]} : (tensor<4x4x16xf32>, tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
// CHECK-NEXT: %[[N:.*]], %{{.*}}, %{{.*}} = graph.layer_norm %[[R1]], {{.*}}graph.sequence_factor = 1 : i64{{.*}} -> (tensor<4x4x16xf32>, tensor<4x4x1xf32>, tensor<4x4x1xf32>)
// CHECK-NEXT: %[[NF:.*]] = graph.reshape %[[N]] : (tensor<4x4x16xf32>) -> tensor<256xf32>
// CHECK-NEXT: %[[NG:.*]] = graph.all_gather %[[NF]] on @mesh {mesh_axes = array<i16: 1>} : (tensor<256xf32>) -> tensor<2x4x4x16xf32>
// CHECK-NEXT: %[[NT:.*]] = graph.transpose %[[NG]] {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x4x4x16xf32>) -> tensor<4x2x4x16xf32>
// CHECK-NEXT: %[[NW:.*]] = graph.reshape %[[NT]] {{.*}} -> tensor<4x8x16xf32>
// CHECK-NEXT: graph.matmul %[[NW]], %arg5
// CHECK: graph.reduce_scatter
// CHECK: %[[R2:.*]] = graph.add %[[N]], {{.*}}graph.sequence_factor = 1 : i64{{.*}} -> tensor<4x4x16xf32>
// CHECK-NEXT: %[[L:.*]] = graph.reduce_sum %[[R2]] {{.*}}partial = sum[0, 1]>]
// CHECK-NEXT: %[[T:.*]] = mesh.all_reduce %[[L]] on @mesh mesh_axes = [1]
// CHECK-NEXT: return %[[T]]
func.func @forward(%x: tensor<4x8x16xf32> {graph.input = "x"},
                   %w1: tensor<16x32xf32> {graph.param = "w1"}, %w2: tensor<32x16xf32> {graph.param = "w2"},
                   %g: tensor<16xf32> {graph.param = "norm.weight"}, %bn: tensor<16xf32> {graph.param = "norm.bias"},
                   %w3: tensor<16x32xf32> {graph.param = "w3"}, %w4: tensor<32x16xf32> {graph.param = "w4"}) -> tensor<f32> {
  %h1 = graph.matmul %x, %w1 : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32> loc("fc1")
  %a1 = graph.relu %h1 : tensor<4x8x32xf32> loc("act1")
  %p1 = graph.matmul %a1, %w2 : (tensor<4x8x32xf32>, tensor<32x16xf32>) -> tensor<4x8x16xf32> loc("fc2")
  %r1 = graph.add %x, %p1 : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32> loc("residual1")
  %n, %m, %s = graph.layer_norm %r1, %g, %bn {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x1xf32>, tensor<4x8x1xf32>) loc("norm")
  %h2 = graph.matmul %n, %w3 : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32> loc("fc3")
  %a2 = graph.relu %h2 : tensor<4x8x32xf32> loc("act2")
  %p2 = graph.matmul %a2, %w4 : (tensor<4x8x32xf32>, tensor<32x16xf32>) -> tensor<4x8x16xf32> loc("fc4")
  %r2 = graph.add %n, %p2 : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32> loc("residual2")
  %l = graph.reduce_sum %r2 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x8x16xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
