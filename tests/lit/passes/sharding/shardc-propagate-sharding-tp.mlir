// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2 tp=2" --shardc-partition | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=1 tp=4" | FileCheck %s --check-prefix=TP4

// Megatron's MLP found from the graph: fc1 column-parallel (its weight's output features and
// its bias split on tp), fc2 row-parallel (input features split): its product is a pending sum
// over tp, all-reduced over mesh axis 1 before the bias and the residual. The LayerNorm and
// fc2's bias stay replicated. The head's 5 classes are padded to 6 (TensorParallelPadding.h)
// and split: the cross-entropy is vocabulary-parallel, its scores -inf at the padding.
// CHECK: mesh.mesh @mesh(shape = 2x2) {graph.axis_names = ["dp", "tp"]}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<4x16xf32> {graph.input = "x", graph.sharding = #mesh.shard<@mesh, {{\[\[}}0]]>}
// CHECK-SAME: %arg2: tensor<16xf32> {graph.param = "ln.weight"}
// CHECK-SAME: %arg4: tensor<16x32xf32> {graph.param = "fc1.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// CHECK-SAME: %arg5: tensor<32xf32> {graph.param = "fc1.bias", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK-SAME: %arg6: tensor<32x16xf32> {graph.param = "fc2.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK-SAME: %arg7: tensor<16xf32> {graph.param = "fc2.bias"}
// CHECK-SAME: %arg8: tensor<16x3xf32> {graph.param = "head.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>, graph.tp_padding = array<i64: 1, 5>}
// CHECK-SAME: graph.tp_layout = [
// CHECK-SAME: "replicated 'ln.weight' dim 0 (size 16): op graph.layer_norm: layer_norm normalises over it"
// CHECK-SAME: "split on tp 'fc1.weight' dim 1 (size 64): 2112 parameter elements, partial sums of 128 elements per step"
// CHECK: %[[H:.*]] = graph.matmul %{{.*}}, %arg4 {{.*}}: (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
// CHECK: graph.add %[[H]], %arg5 {{.*}}: (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK: graph.gelu
// CHECK: %[[ROW:.*]] = graph.matmul %{{.*}}, %arg6 {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0]], partial = sum[1]>]} : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
// CHECK: %[[SUM:.*]] = mesh.all_reduce %[[ROW]] on @mesh mesh_axes = [1] {{.*}}: tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK: graph.add %[[SUM]], %arg7
// CHECK: %[[Z:.*]] = graph.matmul %{{.*}}, %arg8 {{.*}}-> tensor<4x3xf32>
// CHECK: graph.where %{{.*}}, %{{.*}}, %[[Z]] {{.*}}: (tensor<1x3xi1>, tensor<f32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: graph.nll_loss {{.*}}graph.index_block = array<i64: 1, 3, 6>
// CHECK: return
func.func @forward(%x: tensor<8x16xf32> {graph.input = "x"}, %y: tensor<8xi64> {graph.input = "y"},
                   %g: tensor<16xf32> {graph.param = "ln.weight"}, %bb: tensor<16xf32> {graph.param = "ln.bias"},
                   %w1: tensor<16x64xf32> {graph.param = "fc1.weight"}, %b1: tensor<64xf32> {graph.param = "fc1.bias"},
                   %w2: tensor<64x16xf32> {graph.param = "fc2.weight"}, %b2: tensor<16xf32> {graph.param = "fc2.bias"},
                   %wh: tensor<16x5xf32> {graph.param = "head.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %n, %m, %s = graph.layer_norm %x, %g, %bb {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x1xf32>, tensor<8x1xf32>)
  %h = graph.matmul %n, %w1 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %hb = graph.add %h, %b1 : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %a = graph.gelu %hb {approximate = "none"} : tensor<8x64xf32>
  %o = graph.matmul %a, %w2 : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  %ob = graph.add %o, %b2 : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %r = graph.add %x, %ob : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %z = graph.matmul %r, %wh : (tensor<8x16xf32>, tensor<16x5xf32>) -> tensor<8x5xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "sum"} : (tensor<8x5xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x5xf32>)
  return %l : tensor<f32>
}

// -----

// Attention heads split across tp through the Reshape and Transpose of separate Q, K and V
// projections (8 features = 4 heads of 2; each device computes 2 heads); softmax over the keys
// stays whole per head; the output projection is row-parallel (its output features feed a
// softmax, as they feed the next layer's norm in a real model).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<8x4xf32> {graph.param = "q.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// CHECK-SAME: tensor<8x4xf32> {graph.param = "k.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// CHECK-SAME: tensor<8x4xf32> {graph.param = "v.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// CHECK-SAME: tensor<4x8xf32> {graph.param = "o.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK: graph.reshape {{.*}}: (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
// CHECK: graph.softmax {{.*}}{axis = 3 : i64, graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0], [1]]>]} : tensor<1x2x4x4xf32>
// CHECK: graph.reshape {{.*}}: (tensor<1x4x2x2xf32>) -> tensor<1x4x4xf32>
// CHECK: %[[O:.*]] = graph.matmul {{.*}}partial = sum[1]{{.*}}-> tensor<1x4x8xf32>
// CHECK: mesh.all_reduce %[[O]] on @mesh mesh_axes = [1]
func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"},
                   %wq: tensor<8x8xf32> {graph.param = "q.weight"}, %wk: tensor<8x8xf32> {graph.param = "k.weight"},
                   %wv: tensor<8x8xf32> {graph.param = "v.weight"}, %wo: tensor<8x8xf32> {graph.param = "o.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %q = graph.matmul %x, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = graph.matmul %x, %wk : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v = graph.matmul %x, %wv : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %q4 = graph.reshape %q : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %k4 = graph.reshape %k : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %v4 = graph.reshape %v : (tensor<2x4x8xf32>) -> tensor<2x4x4x2xf32>
  %qt = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x2x4xf32>
  %vt = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %s = graph.matmul %qt, %kt : (tensor<2x4x4x2xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x4x4xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<2x4x4x4xf32>
  %o = graph.matmul %p, %vt : (tensor<2x4x4x4xf32>, tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x2xf32>
  %m = graph.reshape %ot : (tensor<2x4x4x2xf32>) -> tensor<2x4x8xf32>
  %y = graph.matmul %m, %wo : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %t = graph.softmax %y {axis = 2 : i64} : tensor<2x4x8xf32>
  %l = graph.reduce_sum %t {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// What stays replicated, and why: the fused QKV features as one block (the split axis is
// whole), a class holding a graph input (inputs are never split on tp), a size tp does not
// divide. The parts the Split cuts are split strided: the fused weight as 3 groups of 8,
// with mlp.weight's input features (shardc-partition-strided.mlir has the partitioned IR).
// TP4: graph.param = "attn.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>, graph.split_groups = array<i64: 1, 3>
// TP4-SAME: "replicated 'attn.weight' dim 0 (size 8): it holds input 'x', which every device reads whole"
// TP4-SAME: "replicated 'attn.weight' dim 1 (size 24): op graph.split: split cuts along it"
// TP4-SAME: "replicated 'mlp.weight' dim 1 (size 6): --strategy tp=4 does not divide its size 6 and padding it to 8 would leave a device only padding"
// TP4-SAME: "split on tp 'proj.weight' dim 1 (size 8): 48 parameter elements, partial sums of 1 elements per step"
// TP4-SAME: "split on tp 'mlp.weight' dim 0 (size 8): 240 parameter elements, partial sums of 48 elements per step"
func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"},
                   %wa: tensor<8x24xf32> {graph.param = "attn.weight"}, %wm: tensor<8x6xf32> {graph.param = "mlp.weight"},
                   %wn: tensor<6x8xf32> {graph.param = "proj.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.matmul %x, %wa : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %q, %k, %v = graph.split %a {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %qk = graph.mul %q, %k : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %qkv = graph.add %qk, %v : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h = graph.matmul %qkv, %wm : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %r = graph.relu %h : tensor<2x4x6xf32>
  %y = graph.matmul %r, %wn : (tensor<2x4x6xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// ZeRO composes with TP: the data-parallel passes run on the dp x tp mesh, their collectives
// over the dp axis (mesh_axes = [0]) on each device's tensor-parallel part; the tensor-parallel
// all-reduces stay on tp.
// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-propagate-sharding="ranks=2 tp=2" --shardc-partition --shardc-place-on-mesh="ranks=2 zero=1" --shardc-shard-optimizer-state | FileCheck %s --check-prefix=ZERO1
// ZERO1-LABEL: func.func @train_step(
// ZERO1: mesh.all_reduce {{.*}} on @mesh mesh_axes = [1] {{.*}}: tensor<4x16xf32>
// ZERO1: graph.reduce_scatter {{.*}} on @mesh {bucket = 0 : i64, mesh_axes = array<i16: 0>}
// ZERO1-SAME: tensor<16x32xf32>
// ZERO1: graph.shard_slice {{.*}} on @mesh {mesh_axes = array<i16: 0>}
// ZERO1: graph.all_gather {{.*}} on @mesh {bucket = 0 : i64, mesh_axes = array<i16: 0>}
// ZERO1: mesh.all_reduce %{{.*}} on @mesh mesh_axes = [0] : tensor<f32> -> tensor<f32>
func.func @forward(%x: tensor<8x16xf32> {graph.input = "x"}, %y: tensor<8xi64> {graph.input = "y"},
                   %w1: tensor<16x64xf32> {graph.param = "fc1.weight"}, %w2: tensor<64x16xf32> {graph.param = "fc2.weight"},
                   %wh: tensor<16x5xf32> {graph.param = "head.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %a = graph.relu %h : tensor<8x64xf32>
  %o = graph.matmul %a, %w2 : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  %r = graph.add %x, %o : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %z = graph.matmul %r, %wh : (tensor<8x16xf32>, tensor<16x5xf32>) -> tensor<8x5xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "sum"} : (tensor<8x5xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x5xf32>)
  return %l : tensor<f32>
}

