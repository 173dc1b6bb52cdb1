// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2 tp=2" --shardc-partition | FileCheck %s

// The partitioner's two rewrites of tensor-parallel pending sums, on a dp x tp = 2 x 2 mesh
// (batch 8: 4 rows per device; hidden 8: 4 features per device).
//
// A pending sum that several ops read is all-reduced once, where it is defined: the row-
// parallel product %o feeds two products that are linear in it, and passing the pending sum
// along both would all-reduce each (two transfers instead of one).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<16x4xf32> {graph.param = "fc1.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}], [1]]>}
// CHECK-SAME: tensor<4x16xf32> {graph.param = "fc2.weight", graph.sharding = #mesh.shard<@mesh, {{\[\[}}1]]>}
// CHECK: %[[O:.*]] = graph.matmul {{.*}}partial = sum[1]>]} : (tensor<4x4xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[S:.*]] = mesh.all_reduce %[[O]] on @mesh mesh_axes = [1] {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0]]>]} : tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK-NOT: mesh.all_reduce
// CHECK: graph.mul %[[S]]
// CHECK: graph.mul %[[S]]
// CHECK-NOT: mesh.all_reduce
// CHECK: return
func.func @forward(%x: tensor<8x16xf32> {graph.input = "x"},
                   %w1: tensor<16x8xf32> {graph.param = "fc1.weight"}, %w2: tensor<8x16xf32> {graph.param = "fc2.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %r = graph.relu %h : tensor<8x8xf32>
  %o = graph.matmul %r, %w2 : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %c1 = graph.constant dense<2.0> : tensor<f32>
  %c2 = graph.constant dense<3.0> : tensor<f32>
  %a = graph.mul %o, %c1 : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %b = graph.mul %o, %c2 : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %sa = graph.softmax %a {axis = 1 : i64} : tensor<8x16xf32>
  %sb = graph.softmax %b {axis = 1 : i64} : tensor<8x16xf32>
  %t = graph.add %sa, %sb : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %l = graph.reduce_sum %t {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Two row-parallel products added to the residual stream one after the other, as autodiff
// and residual blocks do: (x + p1) + p2 would all-reduce p1 and p2 separately; the pending
// terms are summed first, x + (p1 + p2), and all-reduced once.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[P1:.*]] = graph.matmul {{.*}}partial = sum[1]>]}
// CHECK-NOT: mesh.all_reduce
// CHECK: %[[P2:.*]] = graph.matmul {{.*}}partial = sum[1]>]}
// CHECK-NEXT: %[[T:.*]] = graph.add %[[P1]], %[[P2]] {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0]], partial = sum[1]>]}
// CHECK-NEXT: %[[R:.*]] = mesh.all_reduce %[[T]] on @mesh mesh_axes = [1]
// CHECK-NEXT: graph.add %arg0, %[[R]] {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0]]>]} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NOT: mesh.all_reduce
// CHECK: return
func.func @forward(%x: tensor<8x16xf32> {graph.input = "x"},
                   %w1: tensor<16x8xf32> {graph.param = "a.fc1.weight"}, %w2: tensor<8x16xf32> {graph.param = "a.fc2.weight"},
                   %w3: tensor<16x8xf32> {graph.param = "b.fc1.weight"}, %w4: tensor<8x16xf32> {graph.param = "b.fc2.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h1 = graph.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %r1 = graph.relu %h1 : tensor<8x8xf32>
  %p1 = graph.matmul %r1, %w2 : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %h2 = graph.matmul %x, %w3 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %r2 = graph.relu %h2 : tensor<8x8xf32>
  %p2 = graph.matmul %r2, %w4 : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %s1 = graph.add %x, %p1 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %s2 = graph.add %s1, %p2 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %t = graph.softmax %s2 {axis = 1 : i64} : tensor<8x16xf32>
  %l = graph.reduce_sum %t {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The gradient norm (--grad-clip) over tensors split on tp and a replicated one: each device
// takes the norm of its blocks, the squares are summed over tp, and the replicated tensor's
// square is added once; the root of the total is every device's global norm.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[NR:.*]] = graph.global_norm %arg3 : (tensor<16xf32>) -> tensor<f32>
// CHECK-NEXT: %[[SR:.*]] = graph.mul %[[NR]], %[[NR]]
// CHECK-NEXT: %[[NT:.*]] = graph.global_norm %arg1, %arg2 : (tensor<16x4xf32>, tensor<4x16xf32>) -> tensor<f32>
// CHECK-NEXT: %[[ST:.*]] = graph.mul %[[NT]], %[[NT]]
// CHECK-NEXT: %[[AT:.*]] = mesh.all_reduce %[[ST]] on @mesh mesh_axes = [1] {{.*}}: tensor<f32> -> tensor<f32>
// CHECK-NEXT: %[[SUM:.*]] = graph.add %[[SR]], %[[AT]]
// CHECK-NEXT: %[[NORM:.*]] = graph.sqrt %[[SUM]]
// CHECK-NOT: graph.global_norm
// CHECK: graph.add %{{.*}}, %[[NORM]]
func.func @forward(%x: tensor<8x16xf32> {graph.input = "x"},
                   %w1: tensor<16x8xf32> {graph.param = "fc1.weight"}, %w2: tensor<8x16xf32> {graph.param = "fc2.weight"},
                   %b2: tensor<16xf32> {graph.param = "fc2.bias"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %r = graph.relu %h : tensor<8x8xf32>
  %o = graph.matmul %r, %w2 : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %ob = graph.add %o, %b2 : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %s = graph.softmax %ob {axis = 1 : i64} : tensor<8x16xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x16xf32>) -> tensor<f32>
  %n = graph.global_norm %w1, %w2, %b2 : (tensor<16x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<f32>
  %t = graph.add %l, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %t : tensor<f32>
}

// -----

// A training dropout after a column-parallel product, split along the batch on dp and along the
// features on tp: it records the whole tensor's shape, the batch's split dim and its elements
// per row, and the tp block (dim 1, mesh axis 1, 4 features), so each device draws its block
// of the whole tensor's mask.
// CHECK-LABEL: func.func @forward(
// CHECK: graph.dropout {{.*}}{graph.dropout_block = array<i64: 1, 1, 4>, graph.global_shape = array<i64: 8, 8>, {{.*}}graph.split_dim = 0 : i64, graph.split_unit = 1 : i64{{.*}}: (tensor<4x4xf32>, tensor<i64>, tensor<i64>) -> (tensor<4x4xf32>, tensor<4x4xi1>)
func.func @forward(%x: tensor<8x16xf32> {graph.input = "x"},
                   %w1: tensor<16x8xf32> {graph.param = "fc1.weight"}, %w2: tensor<8x16xf32> {graph.param = "fc2.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %k = graph.constant dense<3> : tensor<i64>
  %d, %m = graph.dropout %h, %k, %k {ratio = 5.000000e-01 : f32, training, stream = 2 : i64} : (tensor<8x8xf32>, tensor<i64>, tensor<i64>) -> (tensor<8x8xf32>, tensor<8x8xi1>)
  %o = graph.matmul %d, %w2 : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %s = graph.softmax %o {axis = 1 : i64} : tensor<8x16xf32>
  %l = graph.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
