// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-remat="mode=full" | FileCheck %s --check-prefix=FULL
// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-remat="mode=selective" | FileCheck %s --check-prefix=SEL
// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-remat="mode=none" | FileCheck %s --check-prefix=NONE
// RUN: not shardc-opt %s -split-input-file --shardc-build-train-step --shardc-remat="mode=some" 2>&1 | FileCheck %s --check-prefix=BAD
// Per unit (--remat auto's plans): full for the first unit only, the next lighter mode for the rest.
// RUN: shardc-opt %s -split-input-file --shardc-build-train-step --shardc-remat="mode=full units=1" | FileCheck %s --check-prefix=FIRST

// Two units, /h.0 and /h.1 (node names up to their first ".N" component). full: each unit is
// recomputed from its input right before its backward pass, h.1's first (the backward pass
// runs the units in reverse), and the backward reads only the clones; h.0's output %[[Y]]
// stays, as h.1's input. The forward pass itself is unchanged.
// FULL-LABEL: func.func @train_step(
// FULL-SAME: graph.remat = ["full: 2 units, 4 ops recomputed in the backward pass, 160 bytes of saved activations recomputed, 320 matrix-product FLOPs more per step (whole batch)", "/h.0: keeps 80 bytes for the backward pass without recomputation; recomputes 80 bytes of them (2 ops, 120 matrix-product FLOPs)", "/h.1: keeps 80 bytes for the backward pass without recomputation; recomputes 80 bytes of them (2 ops, 200 matrix-product FLOPs)"]
// FULL: %[[A:.*]] = graph.matmul %arg0, %arg1
// FULL-NEXT: %[[Y:.*]] = graph.tanh %[[A]]
// FULL-NEXT: %[[B:.*]] = graph.matmul %[[Y]], %arg2
// FULL-NEXT: %[[Z:.*]] = graph.tanh %[[B]]
// FULL-NEXT: %[[LOSS:.*]] = graph.reduce_mean %[[Z]]
// FULL: %[[B2:.*]] = graph.matmul %[[Y]], %arg2
// FULL-NEXT: %[[Z2:.*]] = graph.tanh %[[B2]]
// FULL-NEXT: graph.mul %[[Z2]], %[[Z2]]
// FULL: %[[A2:.*]] = graph.matmul %arg0, %arg1
// FULL-NEXT: %[[Y2:.*]] = graph.tanh %[[A2]]
// FULL-NEXT: graph.transpose %[[Y2]]
// FULL: graph.mul %[[Y2]], %[[Y2]]
// FULL-NOT: graph.mul %[[Y]]
// FULL-NOT: graph.mul %[[Z]]
// FULL: return %[[LOSS]],

// FIRST-LABEL: func.func @train_step(
// FIRST-SAME: graph.remat = ["full for the first 1 of 2 units, selective for the rest: 1 units and 0 attention cores, 2 ops recomputed in the backward pass, 80 bytes of saved activations recomputed, 120 matrix-product FLOPs more per step (whole batch)", "/h.0: keeps 80 bytes
// FIRST-SAME: graph.remat_units = 2 : i64
// The first unit, h.0, is recomputed; h.1 is not (it has no attention core).
// FIRST: graph.reduce_mean
// FIRST-NOT: graph.tanh %{{.*}} : tensor<4x5xf32>
// FIRST: %[[A2:.*]] = graph.matmul %arg0, %arg1
// FIRST-NEXT: graph.tanh %[[A2]]

// selective: no product of two activations here, so nothing to recompute.
// SEL-LABEL: func.func @train_step(
// SEL-SAME: graph.remat = ["selective: 0 attention cores, 0 ops recomputed in the backward pass, 0 bytes of saved activations recomputed, 0 matrix-product FLOPs more per step (whole batch)"]
// NONE-LABEL: func.func @train_step(
// NONE-NOT: graph.remat
// BAD: error: --remat 'some': expected none, full or selective
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %w: tensor<3x5xf32> {graph.param = "w"},
                   %w2: tensor<5x5xf32> {graph.param = "w2"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("/h.0/fc/MatMul")
  %y = graph.tanh %a : tensor<4x5xf32> loc("/h.0/Tanh")
  %b = graph.matmul %y, %w2 : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32> loc("/h.1/fc/MatMul")
  %z = graph.tanh %b : tensor<4x5xf32> loc("/h.1/Tanh")
  %l = graph.reduce_mean %z {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32> loc("/loss")
  return %l : tensor<f32>
}

// -----

// An attention core: the scores q k^T (a product of two activations), scaled and soft-maxed,
// read by the product with v. selective recomputes the scores, the scaled scores and the
// probabilities from q and k right before the backward pass first needs them; q, k and v stay.
// SEL-LABEL: func.func @train_step(
// SEL-SAME: "selective: 1 attention cores, 3 ops recomputed in the backward pass, 128 bytes of saved activations recomputed, 512 matrix-product FLOPs
// SEL: %[[Q:.*]] = graph.matmul %arg0, %arg1
// SEL-NEXT: %[[K:.*]] = graph.matmul %arg0, %arg2
// SEL-NEXT: %[[KT:.*]] = graph.transpose %[[K]]
// SEL-NEXT: %[[S:.*]] = graph.matmul %[[Q]], %[[KT]]
// SEL: %[[SS:.*]] = graph.mul %[[S]],
// SEL-NEXT: %[[P:.*]] = graph.softmax %[[SS]]
// SEL-NEXT: %[[O:.*]] = graph.matmul %[[P]], %[[Q]]
// SEL: %[[S2:.*]] = graph.matmul %[[Q]], %[[KT]]
// SEL-NEXT: %[[SS2:.*]] = graph.mul %[[S2]],
// SEL-NEXT: %[[P2:.*]] = graph.softmax %[[SS2]]
// SEL-NOT: %[[P]]
// SEL: graph.softmax_grad {{.*}}%[[P2]]
func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"}, %wq: tensor<8x8xf32> {graph.param = "wq"},
                   %wk: tensor<8x8xf32> {graph.param = "wk"}) -> (tensor<f32> {graph.output = "loss"}) {
  %q = graph.matmul %x, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/q/MatMul")
  %k = graph.matmul %x, %wk : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/k/MatMul")
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32> loc("/h.0/Transpose")
  %s = graph.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32> loc("/h.0/scores/MatMul")
  %c = graph.constant dense<0.5> : tensor<f32> loc("/h.0/Constant")
  %ss = graph.mul %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32> loc("/h.0/Mul")
  %p = graph.softmax %ss {axis = 2 : i64} : tensor<2x4x4xf32> loc("/h.0/Softmax")
  %o = graph.matmul %p, %q : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/out/MatMul")
  %l = graph.reduce_mean %o {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32> loc("/loss")
  return %l : tensor<f32>
}
