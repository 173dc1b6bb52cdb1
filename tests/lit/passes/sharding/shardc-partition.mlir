// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" --shardc-partition -verify-diagnostics | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" --shardc-partition="local-rows=3" -verify-diagnostics | FileCheck %s --check-prefix=ROWS3

// A static export: the batch (4) is baked into the reshapes; each device's reshapes get its 2
// rows. The loss is left a pending sum over the dp axis (the data-parallel passes reduce it).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x6x8xf32> {graph.input = "x", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: %arg2: tensor<8x8xf32> {graph.param = "w"})
// CHECK: graph.matmul %arg0, %arg2 {{.*}}: (tensor<2x6x8xf32>, tensor<8x8xf32>) -> tensor<2x6x8xf32>
// CHECK: graph.reshape {{.*}}: (tensor<2x6x8xf32>) -> tensor<2x6x2x4xf32>
// CHECK: graph.softmax {{.*}}: tensor<2x2x6x6xf32>
// CHECK: graph.reshape {{.*}}: (tensor<2x6x2x4xf32>) -> tensor<12x8xf32>
// CHECK: graph.reshape %arg1 {{.*}}: (tensor<2x6xi64>) -> tensor<12xi64>
// CHECK: %[[LOSS:.*]], %{{.*}} = graph.softmax_cross_entropy_loss {{.*}}graph.shardings = [#mesh.shard<@dp, [], partial = sum[0]>, #mesh.shard<@dp, {{\[\[}}0]]>]{{.*}}: (tensor<12x8xf32>, tensor<12xi64>) -> (tensor<f32>, tensor<12x8xf32>)
// CHECK: return %[[LOSS]]
// ROWS3-LABEL: func.func @forward(
// ROWS3-SAME: tensor<3x6x8xf32>
// ROWS3: graph.reshape {{.*}}: (tensor<3x6x2x4xf32>) -> tensor<18x8xf32>
func.func @forward(%x: tensor<4x6x8xf32> {graph.input = "x"}, %y: tensor<4x6xi64> {graph.input = "y"},
                   %w: tensor<8x8xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %q = graph.matmul %x, %w : (tensor<4x6x8xf32>, tensor<8x8xf32>) -> tensor<4x6x8xf32>
  %h = graph.reshape %q : (tensor<4x6x8xf32>) -> tensor<4x6x2x4xf32>
  %t = graph.transpose %h {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x6x2x4xf32>) -> tensor<4x2x6x4xf32>
  %k = graph.transpose %h {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x6x2x4xf32>) -> tensor<4x2x4x6xf32>
  %s = graph.matmul %t, %k : (tensor<4x2x6x4xf32>, tensor<4x2x4x6xf32>) -> tensor<4x2x6x6xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<4x2x6x6xf32>
  %o = graph.matmul %p, %t : (tensor<4x2x6x6xf32>, tensor<4x2x6x4xf32>) -> tensor<4x2x6x4xf32>
  %b = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x2x6x4xf32>) -> tensor<4x6x2x4xf32>
  %m = graph.reshape %b : (tensor<4x6x2x4xf32>) -> tensor<24x8xf32>
  %yy = graph.reshape %y : (tensor<4x6xi64>) -> tensor<24xi64>
  %l, %lp = graph.softmax_cross_entropy_loss %m, %yy {reduction = "sum"} : (tensor<24x8xf32>, tensor<24xi64>) -> (tensor<f32>, tensor<24x8xf32>)
  return %l : tensor<f32>
}

// -----

// A mean over the batch is this device's mean weighted by its share of the rows (4 of 8; 3 of
// 8 with local-rows=3), then a pending sum; subtracting it from the rows needs the whole
// mean, so it is all-reduced over mesh axis 0 first.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<4x3xf32>
// CHECK: %[[MEAN:.*]] = graph.reduce_mean %arg0 {axes = array<i64: 0>, keepdims = true} : (tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK: %[[W:.*]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[SHARE:.*]] = graph.mul %[[MEAN]], %[[W]] {graph.shardings = [#mesh.shard<@dp, [], partial = sum[0]>]}
// CHECK: %[[ALL:.*]] = mesh.all_reduce %[[SHARE]] on @dp mesh_axes = [0] : tensor<1x3xf32> -> tensor<1x3xf32>
// CHECK: graph.sub %arg0, %[[ALL]] {graph.shardings = [#mesh.shard<@dp, {{\[\[}}0]]>]}
// CHECK: graph.reduce_sum {{.*}}partial = sum[0]
// ROWS3-LABEL: func.func @forward(
// ROWS3-SAME: tensor<3x3xf32>
// ROWS3: graph.constant dense<3.750000e-01> : tensor<f32>
// ROWS3: mesh.all_reduce
func.func @forward(%x: tensor<8x3xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %m = graph.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : (tensor<8x3xf32>) -> tensor<1x3xf32>
  %c = graph.sub %x, %m : (tensor<8x3xf32>, tensor<1x3xf32>) -> tensor<8x3xf32>
  %q = graph.mul %c, %c : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %l = graph.reduce_sum %q {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Shapes held outside result types: slice ends, a constant of the batch's shape (the same for
// every row, so each device keeps its rows of it).
// CHECK-LABEL: func.func @forward(
// CHECK: graph.expand {{.*}}: (tensor<1x3xf32>) -> tensor<4x3xf32>
// CHECK: graph.slice %arg0 {ends = array<i64: 4, 3>, {{.*}}: (tensor<4x6xf32>) -> tensor<4x3xf32>
// CHECK: graph.constant {{.*}}dense<2.000000e+00> : tensor<4x3xf32>
// ROWS3-LABEL: func.func @forward(
// ROWS3: graph.slice %arg0 {ends = array<i64: 3, 3>, {{.*}}: (tensor<3x6xf32>) -> tensor<3x3xf32>
// ROWS3: graph.constant {{.*}}dense<{{\[\[}}1.000000e+00, 2.000000e+00], [1.000000e+00, 2.000000e+00], [1.000000e+00, 2.000000e+00]]> : tensor<3x2xf32>
func.func @forward(%x: tensor<8x6xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %c = graph.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>
  %e = graph.expand %c : (tensor<1x3xf32>) -> tensor<8x3xf32>
  %s = graph.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 8, 3>, steps = array<i64: 1, 1>} : (tensor<8x6xf32>) -> tensor<8x3xf32>
  %k = graph.constant dense<2.0> : tensor<8x3xf32>
  %a = graph.add %s, %e : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %b = graph.mul %a, %k : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %r = graph.constant dense<[[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]> : tensor<8x2xf32>
  %y = graph.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 8, 2>, steps = array<i64: 1, 1>} : (tensor<8x6xf32>) -> tensor<8x2xf32>
  %z = graph.mul %y, %r : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %l1 = graph.reduce_sum %b {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x3xf32>) -> tensor<f32>
  %l2 = graph.reduce_sum %z {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x2xf32>) -> tensor<f32>
  %l = graph.add %l1, %l2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A training dropout splits with the batch and keeps the whole tensor's shape, the split dim
// and its elements per batch row, so each device draws its block of the whole tensor's mask.
// CHECK-LABEL: func.func @forward(
// CHECK: graph.dropout {{.*}}graph.global_shape = array<i64: 8, 6>, {{.*}}graph.split_dim = 0 : i64, graph.split_unit = 1 : i64{{.*}}: (tensor<4x6xf32>, tensor<i64>, tensor<i64>) -> (tensor<4x6xf32>, tensor<4x6xi1>)
// ROWS3-LABEL: func.func @forward(
// ROWS3: graph.dropout {{.*}}graph.global_shape = array<i64: 8, 6>{{.*}}: (tensor<3x6xf32>, tensor<i64>, tensor<i64>) -> (tensor<3x6xf32>, tensor<3x6xi1>)
func.func @forward(%x: tensor<8x6xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %k = graph.constant dense<3> : tensor<i64>
  %y, %m = graph.dropout %x, %k, %k {ratio = 5.000000e-01 : f32, training, stream = 2 : i64} : (tensor<8x6xf32>, tensor<i64>, tensor<i64>) -> (tensor<8x6xf32>, tensor<8x6xi1>)
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A constant_of_shape split along the batch: its shape operand becomes a constant of the local
// shape (each device's 4 rows; 3 with local-rows=3).
// CHECK-LABEL: func.func @forward(
// CHECK: %[[S:.*]] = graph.constant dense<[4, 6]> : tensor<2xi64>
// CHECK-NEXT: graph.constant_of_shape %[[S]] {{.*}}: (tensor<2xi64>) -> tensor<4x6xf32>
// ROWS3-LABEL: func.func @forward(
// ROWS3: %[[S:.*]] = graph.constant dense<[3, 6]> : tensor<2xi64>
// ROWS3-NEXT: graph.constant_of_shape %[[S]] {{.*}}: (tensor<2xi64>) -> tensor<3x6xf32>
func.func @forward(%x: tensor<8x6xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %shape = graph.constant dense<[8, 6]> : tensor<2xi64>
  %ones = graph.constant_of_shape %shape {value = dense<1.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<8x6xf32>
  %y = graph.mul %x, %ones : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// --precision bf16's rounding of a sum over the batch (a weight gradient, x^T x here): each
// device rounds its partial sum and the sum stays pending through the rounding and the exact
// widening, for the data-parallel reduction to add the rounded parts (as DDP and FSDP reduce
// each rank's rounded gradient). No all-reduce before the cast: summing there and again in the
// data-parallel reduction would count the gradient twice.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[G:.*]] = graph.matmul {{.*}}partial = sum[0]>]} : (tensor<8x2xf32>, tensor<2x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: %[[GH:.*]] = graph.cast %[[G]] {graph.shardings = [#mesh.shard<@dp, [], partial = sum[0]>], to = bf16}
// CHECK-NEXT: %[[GR:.*]] = graph.cast %[[GH]] {graph.shardings = [#mesh.shard<@dp, [], partial = sum[0]>], to = f32}
// CHECK-NEXT: graph.mul %[[GR]], %arg1
// CHECK-NOT: mesh.all_reduce
// CHECK: return
func.func @forward(%x: tensor<4x8xf32> {graph.input = "x"}, %w: tensor<8x8xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %xt = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %g = graph.matmul %xt, %x : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %gh = graph.cast %g {to = bf16} : (tensor<8x8xf32>) -> tensor<8x8xbf16>
  %gr = graph.cast %gh {to = f32} : (tensor<8x8xbf16>) -> tensor<8x8xf32>
  %m = graph.mul %gr, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %l = graph.reduce_sum %m {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
