// Round-trip of the graph dialect's assembly, and result-shape inference in the builders.
// RUN: shardc-opt %s -split-input-file | shardc-opt | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: graph.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.gelu %{{.*}} {approximate = "tanh"} : tensor<2x3xf32>
  %1 = graph.gelu %0 {approximate = "tanh"} : tensor<2x3xf32>
  // CHECK: graph.less {{.*}} -> tensor<2x3xi1>
  %2 = graph.less %1, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %3 = graph.and %2, %c : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: graph.where
  %4 = graph.where %3, %1, %a : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.sin %{{.*}} : tensor<2x3xf32>
  %5 = graph.sin %4 : tensor<2x3xf32>
  // CHECK: graph.cos %{{.*}} : tensor<2x3xf32>
  %6 = graph.cos %5 : tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @pad
func.func @pad(%a: tensor<2x5xf32>, %i: tensor<7xi64>) -> (tensor<3x8xf32>, tensor<8xi64>) {
  // CHECK: graph.pad %{{.*}} {pads = array<i64: 1, 2, 0, 1>, value = 0.000000e+00 : f64} : (tensor<2x5xf32>) -> tensor<3x8xf32>
  %0 = graph.pad %a {pads = array<i64: 1, 2, 0, 1>, value = 0.0 : f64} : (tensor<2x5xf32>) -> tensor<3x8xf32>
  // A crop and a pad of -100 (an ignore_index) on integers.
  // CHECK: graph.pad %{{.*}} {pads = array<i64: -1, 2>, value = -1.000000e+02 : f64} : (tensor<7xi64>) -> tensor<8xi64>
  %1 = graph.pad %i {pads = array<i64: -1, 2>, value = -100.0 : f64} : (tensor<7xi64>) -> tensor<8xi64>
  return %0, %1 : tensor<3x8xf32>, tensor<8xi64>
}

// -----

// CHECK-LABEL: func.func @linalg
func.func @linalg(%a: tensor<4x2x8xf32>, %w: tensor<8x16xf32>, %s: tensor<16xf32>) -> tensor<4x2x16xf32> {
  // CHECK: graph.matmul {{.*}} -> tensor<4x2x16xf32>
  %0 = graph.matmul %a, %w : (tensor<4x2x8xf32>, tensor<8x16xf32>) -> tensor<4x2x16xf32>
  // CHECK: graph.layer_norm {{.*}} -> (tensor<4x2x16xf32>, tensor<4x2x1xf32>, tensor<4x2x1xf32>)
  %y, %mean, %inv = graph.layer_norm %0, %s, %s {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x2x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x2x16xf32>, tensor<4x2x1xf32>, tensor<4x2x1xf32>)
  %1 = graph.softmax %y {axis = 2 : i64} : tensor<4x2x16xf32>
  return %1 : tensor<4x2x16xf32>
}

// -----

// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>) -> (tensor<4x5xf32>, tensor<2x1x4xf32>, tensor<3x2xf32>) {
  // CHECK: graph.transpose {{.*}} -> tensor<4x3x2xf32>
  %t = graph.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  // CHECK: graph.gather {{.*}} -> tensor<4x5x2xf32>
  %g = graph.gather %t, %i {axis = 1 : i64} : (tensor<4x3x2xf32>, tensor<5xi64>) -> tensor<4x5x2xf32>
  %r = graph.reduce_sum %g {axes = array<i64: 2>, keepdims = false} : (tensor<4x5x2xf32>) -> tensor<4x5xf32>
  // CHECK: graph.split {{.*}} -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  // CHECK: graph.slice {{.*}} -> tensor<3x3x1xf32>
  %s = graph.slice %t {starts = array<i64: 3, 0, 1>, ends = array<i64: 0, 3, 0>, steps = array<i64: -1, 1, -1>} : (tensor<4x3x2xf32>) -> tensor<3x3x1xf32>
  %s2 = graph.reshape %s : (tensor<3x3x1xf32>) -> tensor<9xf32>
  %s3 = graph.slice %s2 {starts = array<i64: 0>, ends = array<i64: 6>, steps = array<i64: 1>} : (tensor<9xf32>) -> tensor<6xf32>
  %s4 = graph.reshape %s3 : (tensor<6xf32>) -> tensor<3x2xf32>
  return %r, %a, %s4 : tensor<4x5xf32>, tensor<2x1x4xf32>, tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @losses
func.func @losses(%scores: tensor<8x10xf32>, %labels: tensor<8xi64>) -> (tensor<f32>, tensor<8xf32>) {
  // CHECK: graph.softmax_cross_entropy_loss {{.*}} -> (tensor<f32>, tensor<8x10xf32>)
  %loss, %logp = graph.softmax_cross_entropy_loss %scores, %labels {ignore_index = -100 : i64, reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  // CHECK: graph.nll_loss {{.*}} -> tensor<8xf32>
  %nll = graph.nll_loss %logp, %labels {reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
  return %loss, %nll : tensor<f32>, tensor<8xf32>
}

// -----

// Coalesced collectives on a 3-rank mesh: 7 elements -> shards of 3 (2 padding elements).
// CHECK-LABEL: func.func @collectives
// CHECK: graph.reduce_scatter %{{.*}}, %{{.*}} on @dp {bucket = 0 : i64} : (tensor<7xf32>, tensor<2x3xf32>) -> (tensor<3xf32>, tensor<2xf32>)
// CHECK: graph.all_gather %{{.*}}, %{{.*}} on @dp {unit = "h.0"} : (tensor<3xf32>, tensor<2xf32>) -> (tensor<7xf32>, tensor<2x3xf32>)
// CHECK: graph.shard_slice %{{.*}} on @dp : (tensor<7xf32>) -> tensor<3xf32>
// CHECK: graph.all_reduce %{{.*}} on @dp : (tensor<7xf32>) -> tensor<7xf32>
mesh.mesh @dp(shape = 3)
func.func @collectives(%a: tensor<7xf32>, %b: tensor<2x3xf32>) -> (tensor<7xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<7xf32>) {
  %s:2 = graph.reduce_scatter %a, %b on @dp {bucket = 0 : i64} : (tensor<7xf32>, tensor<2x3xf32>) -> (tensor<3xf32>, tensor<2xf32>)
  %w:2 = graph.all_gather %s#0, %s#1 on @dp {unit = "h.0"} : (tensor<3xf32>, tensor<2xf32>) -> (tensor<7xf32>, tensor<2x3xf32>)
  %t = graph.shard_slice %a on @dp : (tensor<7xf32>) -> tensor<3xf32>
  %r = graph.all_reduce %a on @dp : (tensor<7xf32>) -> tensor<7xf32>
  return %w#0, %w#1, %t, %r : tensor<7xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<7xf32>
}

// -----

// Point-to-point transfers between pipeline stages on the pp axis (1) of a dp x pp mesh: the
// first stage sends activations, the last receives them, a middle one does both, and two
// stages exchange (1F1B) in one op each.
// CHECK-LABEL: func.func @transfers
// CHECK: graph.send_recv %{{.*}}, %{{.*}} on @mesh {mesh_axes = array<i16: 1>, send_to = 1 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> ()
// CHECK: graph.send_recv on @mesh {mesh_axes = array<i16: 1>, recv_from = 0 : i64} : () -> (tensor<4x8xf32>, tensor<4xi64>)
// CHECK: graph.send_recv %{{.*}} on @mesh {mesh_axes = array<i16: 1>, recv_from = 1 : i64, send_to = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
mesh.mesh @mesh(shape = 2x2)
func.func @transfers(%act: tensor<4x8xf32>, %pos: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4xi64>, tensor<4x8xbf16>) {
  graph.send_recv %act, %pos on @mesh {mesh_axes = array<i16: 1>, send_to = 1} : (tensor<4x8xf32>, tensor<4xi64>) -> ()
  %a, %p = graph.send_recv on @mesh {mesh_axes = array<i16: 1>, recv_from = 0} : () -> (tensor<4x8xf32>, tensor<4xi64>)
  %g = graph.send_recv %act on @mesh {mesh_axes = array<i16: 1>, send_to = 1, recv_from = 1} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return %a, %p, %g : tensor<4x8xf32>, tensor<4xi64>, tensor<4x8xbf16>
}

// -----

// Shardings on arguments: upstream #mesh.shard (split dimensions) and ZeRO's flat shard.
// CHECK-LABEL: func.func @shardings(
// CHECK-SAME: %{{.*}}: tensor<8x4xf32> {graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK-SAME: %{{.*}}: tensor<6xf32> {graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 3]>}
mesh.mesh @dp(shape = 2)
func.func @shardings(%x: tensor<8x4xf32> {graph.sharding = #mesh.shard<@dp, [[0]]>},
                     %m: tensor<6xf32> {graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 3]>}) -> tensor<6xf32> {
  return %m : tensor<6xf32>
}

// Convolution, pooling and scatter_nd round-trip with their explicit attributes.
// CHECK-LABEL: func.func @conv_pool_scatter
func.func @conv_pool_scatter(%x: tensor<2x4x7x7xf32>, %w: tensor<6x2x3x3xf32>, %d: tensor<2x3xi64>, %i: tensor<2x2x2xi64>, %u: tensor<2x2xi64>) -> (tensor<2x6x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x3x3xf32>, tensor<2x3xi64>) {
  // CHECK: graph.conv %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x7x7xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x4x4xf32>
  %0 = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x7x7xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x4x4xf32>
  // CHECK: graph.max_pool %{{.*}} {ceil_mode = true
  %1 = graph.max_pool %x {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x7x7xf32>) -> tensor<2x4x4x4xf32>
  // CHECK: graph.avg_pool %{{.*}} {ceil_mode = false, count_include_pad = true
  %2 = graph.avg_pool %x {ceil_mode = false, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 3, 3>} : (tensor<2x4x7x7xf32>) -> tensor<2x4x3x3xf32>
  // CHECK: graph.cum_sum %{{.*}} {axis = 1 : i64, exclusive = false, reverse = true} : tensor<2x3xi64>
  %4 = graph.cum_sum %d {axis = 1 : i64, exclusive = false, reverse = true} : tensor<2x3xi64>
  // CHECK: graph.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = "none"} : (tensor<2x3xi64>, tensor<2x2x2xi64>, tensor<2x2xi64>) -> tensor<2x3xi64>
  %3 = graph.scatter_nd %4, %i, %u {reduction = "none"} : (tensor<2x3xi64>, tensor<2x2x2xi64>, tensor<2x2xi64>) -> tensor<2x3xi64>
  return %0, %1, %2, %3 : tensor<2x6x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x3x3xf32>, tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @softplus_mod_arg_max
func.func @softplus_mod_arg_max(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x1xi64>) {
  // CHECK: graph.softplus %{{.*}} : tensor<2x3xf32>
  %0 = graph.softplus %a : tensor<2x3xf32>
  // CHECK: graph.mod %{{.*}}, %{{.*}} {fmod = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.mod %0, %b {fmod = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.mod %{{.*}}, %{{.*}} {fmod = false} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %2 = graph.mod %i, %i {fmod = false} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  // CHECK: graph.arg_max %{{.*}} {axis = 1 : i64, keepdims = true, select_last_index = false} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  %3 = graph.arg_max %1 {axis = 1 : i64, keepdims = true, select_last_index = false} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  return %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x1xi64>
}
