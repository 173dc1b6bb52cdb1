// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-place-on-mesh="ranks=2 zero=3" --shardc-shard-parameters | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-place-on-mesh="ranks=2 zero=3" --shardc-shard-parameters="fsdp-unit=h\.[0-9]+" | FileCheck %s --check-prefix=REGEX

// Three blocks h.0, h.1, h.2 (found automatically: the name up to its first number), then a
// head. Parameters and state are stored as shards on 2 ranks (4x4 = 16 elements -> 8).
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W0:[a-z0-9]+]]: tensor<8xf32> {graph.param = "h.0.weight", graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 4]>}
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<8xf32> {graph.param = "h.1.weight", graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 4]>}
// CHECK-SAME: %[[W2:[a-z0-9]+]]: tensor<8xf32> {graph.param = "h.2.weight", graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 4]>}
// CHECK-SAME: %[[WH:[a-z0-9]+]]: tensor<6xf32> {graph.param = "head.weight", graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [4, 3]>}
// Forward: unit h.0 is gathered, and h.1's gather is issued before h.0 computes (prefetch);
// each later unit's gather comes before the previous unit's first use.
// CHECK: %[[F0:.*]] = graph.all_gather %[[W0]] on @dp {unit = "h.0"} : (tensor<8xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[F1:.*]] = graph.all_gather %[[W1]] on @dp {unit = "h.1"}
// CHECK-NEXT: %[[A0:.*]] = graph.matmul %{{.*}}, %[[F0]]
// CHECK-NEXT: %[[F2:.*]] = graph.all_gather %[[W2]] on @dp {unit = "h.2"}
// CHECK-NEXT: %[[A1:.*]] = graph.matmul %[[A0]], %[[F1]]
// CHECK-NEXT: %[[FH:.*]] = graph.all_gather %[[WH]] on @dp {unit = "head"}
// CHECK-NEXT: %[[A2:.*]] = graph.matmul %[[A1]], %[[F2]]
// CHECK-NEXT: graph.matmul %[[A2]], %[[FH]]
// CHECK: graph.softmax_cross_entropy_loss
// Backward: gathered again (the forward copies are dead by now), last unit first, with the
// same prefetch; each unit's gradient is reduce-scattered once final.
// CHECK: %[[BH:.*]] = graph.all_gather %[[WH]] on @dp {unit = "head"}
// CHECK-NEXT: %[[B2:.*]] = graph.all_gather %[[W2]] on @dp {unit = "h.2"}
// CHECK: graph.reduce_scatter %{{.*}} on @dp {unit = "head"} : (tensor<4x3xf32>) -> tensor<6xf32>
// CHECK: graph.all_gather %[[W1]] on @dp {unit = "h.1"}
// CHECK: graph.reduce_scatter %{{.*}} on @dp {unit = "h.2"} : (tensor<4x4xf32>) -> tensor<8xf32>
// CHECK: graph.reduce_scatter %{{.*}} on @dp {unit = "h.1"}
// CHECK: %[[G0:.*]] = graph.reduce_scatter %{{.*}} on @dp {unit = "h.0"}
// The update works on shards and the step returns shards: nothing is gathered after it.
// CHECK: %[[NP:.*]], %{{.*}}, %{{.*}} = graph.adamw_update %[[W0]], %[[G0]], {{.*}} -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NOT: graph.all_gather
// CHECK: return %{{.*}}, %[[NP]],
func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %y: tensor<2xi64> {graph.input = "y"},
                   %w0: tensor<4x4xf32> {graph.param = "h.0.weight"}, %w1: tensor<4x4xf32> {graph.param = "h.1.weight"},
                   %w2: tensor<4x4xf32> {graph.param = "h.2.weight"}, %wh: tensor<4x3xf32> {graph.param = "head.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a0 = graph.matmul %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %a1 = graph.matmul %a0, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %a2 = graph.matmul %a1, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %z = graph.matmul %a2, %wh : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "mean"} : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
  return %l : tensor<f32>
}

// -----

// --fsdp-unit: the matched part of the name is the unit ("h.0" for "h.0.attn.w" and
// "h.0.mlp.w"); parameters it does not match form the unit "(rest)". A 3-element bias on 2
// ranks is padded to 2 x 2.
// REGEX-LABEL: func.func @train_step({{.*}}"h.0.attn.w"
// REGEX-SAME: tensor<2xf32> {graph.param = "bias", graph.sharding = #graph.flat_shard<@dp, axis = 0, global_shape = [3]>}
// REGEX: graph.all_gather %{{.*}}, %{{.*}} on @dp {unit = "h.0"} : (tensor<6xf32>, tensor<6xf32>) -> (tensor<3x4xf32>, tensor<4x3xf32>)
// REGEX: graph.all_gather %{{.*}} on @dp {unit = "(rest)"} : (tensor<2xf32>) -> tensor<3xf32>
func.func @forward(%x: tensor<2x3xf32> {graph.input = "x"}, %y: tensor<2xi64> {graph.input = "y"},
                   %a: tensor<3x4xf32> {graph.param = "h.0.attn.w"}, %m: tensor<4x3xf32> {graph.param = "h.0.mlp.w"},
                   %b: tensor<3xf32> {graph.param = "bias"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %a : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %z = graph.matmul %h, %m : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %zb = graph.add %z, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %zb, %y {reduction = "mean"} : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
  return %l : tensor<f32>
}
