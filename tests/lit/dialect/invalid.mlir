// Verifiers and shape inference reject inconsistent ops with a clear message.
// RUN: shardc-opt %s -split-input-file -verify-diagnostics

func.func @bad_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @mixed_types(%a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.sub %a, %b : (tensor<2xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{contraction dimensions differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{cannot reshape 2x3 (6 elements) to 5 (5 elements)}}
  %0 = graph.reshape %a : (tensor<2x3xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @reduce_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{axes must be sorted and unique}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_mean %a {axes = array<i64: 1, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @slice_oob(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{slice of dimension 0 reads outside [0, 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %a {starts = array<i64: 3>, ends = array<i64: 7>, steps = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @split_sum(%a: tensor<4xf32>) -> tensor<1xf32> {
  // expected-error @+2 {{split sizes sum to 3 but dimension 0 has 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0, %1 = graph.split %a {axis = 0 : i64, sizes = array<i64: 1, 2>} : (tensor<4xf32>) -> (tensor<1xf32>, tensor<2xf32>)
  return %0 : tensor<1xf32>
}

// -----

func.func @gelu_mode(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{approximate must be "none" or "tanh"}}
  %0 = graph.gelu %a {approximate = "fast"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @loss_labels(%s: tensor<8x10xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+2 {{labels shape 4 does not match scores 8x10}}
  // expected-error @+1 {{failed to infer returned types}}
  %0, %1 = graph.softmax_cross_entropy_loss %s, %l {reduction = "mean"} : (tensor<8x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  return %0 : tensor<f32>
}

// -----

func.func @expand_bad(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{cannot broadcast 3 to 2x4}}
  %0 = graph.expand %a : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @dropout_key_without_training(%a: tensor<4xf32>, %s: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{only a training dropout takes a key}}
  %0, %1 = graph.dropout %a, %s, %s {ratio = 0.5 : f32} : (tensor<4xf32>, tensor<i64>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0 : tensor<4xf32>
}

// -----

func.func @dropout_half_key(%a: tensor<4xf32>, %s: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{key must be (seed, step), got 1 operands}}
  %0, %1 = graph.dropout %a, %s {ratio = 0.5 : f32, training} : (tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0 : tensor<4xf32>
}

// -----

func.func @dropout_ratio(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ratio must be in [0, 1), got 1}}
  %0, %1 = graph.dropout %a {ratio = 1.0 : f32, training} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @dp(shape = 4)
func.func @bad_shard(%g: tensor<3x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{operand 0 ('tensor<3x3xf32>') and result 0 ('tensor<2xf32>') do not match: the shard must be tensor<ceil(numel / ranks)>}}
  %s = graph.reduce_scatter %g on @dp : (tensor<3x3xf32>) -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

func.func @no_mesh(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{mesh @dp is not a mesh.mesh}}
  %s = graph.all_reduce %g on @dp : (tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

mesh.mesh @dp(shape = 2)
func.func @bad_gather(%s: tensor<3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{the shard must be tensor<ceil(numel / ranks)>}}
  %w = graph.all_gather %s on @dp : (tensor<3xf32>) -> tensor<2x2xf32>
  return %w : tensor<2x2xf32>
}

// -----

// A transfer names a peer for each side that has tensors, and only for those, among the ranks
// of its axes; it needs a side with tensors and a peer to talk to.
mesh.mesh @pp(shape = 4)
func.func @transfer_without_peer(%a: tensor<3xf32>) {
  // expected-error @+1 {{has tensors to send but no send_to}}
  graph.send_recv %a on @pp : (tensor<3xf32>) -> ()
  return
}

// -----

mesh.mesh @pp(shape = 4)
func.func @transfer_peer_outside(%a: tensor<3xf32>) {
  // expected-error @+1 {{send_to 4 is not a rank of its 4 ranks}}
  graph.send_recv %a on @pp {send_to = 4} : (tensor<3xf32>) -> ()
  return
}

// -----

mesh.mesh @pp(shape = 4)
func.func @transfer_peer_unused(%a: tensor<3xf32>) {
  // expected-error @+1 {{recv_from is given, but there is nothing to receive}}
  graph.send_recv %a on @pp {send_to = 1, recv_from = 2} : (tensor<3xf32>) -> ()
  return
}

// -----

mesh.mesh @pp(shape = 4)
func.func @transfer_of_nothing() {
  // expected-error @+1 {{needs a tensor to send or to receive}}
  graph.send_recv on @pp : () -> ()
  return
}

// -----

mesh.mesh @pp(shape = 1)
func.func @transfer_alone(%a: tensor<3xf32>) {
  // expected-error @+1 {{runs over 1 rank: a transfer needs a peer}}
  graph.send_recv %a on @pp {send_to = 0} : (tensor<3xf32>) -> ()
  return
}

// -----

func.func @sin_of_integers(%a: tensor<3xi64>) -> tensor<3xi64> {
  // expected-error @+1 {{must be ranked tensor of 32-bit float values}}
  %0 = graph.sin %a : tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @pad_crops_too_much(%a: tensor<3xf32>) -> tensor<0xf32> {
  // expected-error @+2 {{pads of dimension 0 (-2, -2) remove more than its 3 elements}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pad %a {pads = array<i64: -2, -2>, value = 0.0 : f64} : (tensor<3xf32>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

func.func @pad_wrong_count(%a: tensor<3x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+2 {{pads needs 2 entries per dimension (4), got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pad %a {pads = array<i64: 1, 0>, value = 0.0 : f64} : (tensor<3x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @conv_groups_do_not_divide(%x: tensor<1x6x5x5xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+2 {{group 2: input channels 6 and weight 4x4x3x3 do not split into that many groups}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x6x5x5xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @pool_window_too_large(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x1x1xf32> {
  // expected-error @+2 {{the window (kernel 5, dilation 1) is larger than spatial dim 0 (3 with pads 0, 0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 5, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x2x1x1xf32>
  return %0 : tensor<1x2x1x1xf32>
}

// -----

func.func @scatter_nd_updates_shape(%d: tensor<2x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{updates 2x2 must be 2x3 (indices.shape[:-1] + data.shape[k:])}}
  %0 = graph.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<2x3xf32>, tensor<2x1xi64>, tensor<2x2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @scatter_nd_bad_reduction(%d: tensor<3xf32>, %i: tensor<1x1xi64>, %u: tensor<1xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{reduction 'xor' is not none, add, mul, max or min}}
  %0 = graph.scatter_nd %d, %i, %u {reduction = "xor"} : (tensor<3xf32>, tensor<1x1xi64>, tensor<1xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @float_mod_needs_fmod(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{on floats needs fmod}}
  %0 = graph.mod %a, %a {fmod = false} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @arg_max_of_bool(%a: tensor<3xi1>) -> tensor<i64> {
  // expected-error @+2 {{arg_max needs a numeric input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.arg_max %a {axis = 0 : i64, keepdims = false, select_last_index = false} : (tensor<3xi1>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

func.func @fused_forward_slot(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{step 0 reads slot 1, not an earlier one}}
  %0 = graph.fused_elementwise %a {args = array<i64: 1, -1>, ops = ["exp"], results = array<i64: 1>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @fused_unknown_step(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{step 0: unknown op 'gelu'}}
  %0 = graph.fused_elementwise %a {args = array<i64: 0, -1>, ops = ["gelu"], results = array<i64: 1>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @fused_no_broadcast(%a: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{an input does not broadcast to the outputs' shape}}
  %0 = graph.fused_elementwise %a {args = array<i64: 0, -1>, ops = ["neg"], results = array<i64: 1>} : (tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @fused_unused_arg(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{step 0: unused args must be -1}}
  %0 = graph.fused_elementwise %a {args = array<i64: 0, 0>, ops = ["neg"], results = array<i64: 1>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @fused_missing_result(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{result slot 2 does not exist}}
  %0 = graph.fused_elementwise %a {args = array<i64: 0, -1>, ops = ["neg"], results = array<i64: 2>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
