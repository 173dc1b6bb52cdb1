// A tied parameter across stages: the token embedding `wte` is read by the embedding Gather on
// stage 0 and, transposed, by the output projection on stage 1. Stage 1 sends its part of
// wte's gradient with each microbatch's activation gradient (the embedding's sum, where
// autodiff adds the two contributions, is on stage 0); stage 0 alone updates wte (AdamW and
// its state) and sends the new value to stage 1 after everything else; stage 1 returns what it
// receives as its own wte, which it marks graph.pipeline_copy (not trained there).
// RUN: shardc-opt %s --shardc-decompose-mean-loss --shardc-assign-stages="stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=0 schedule=1f1b" | FileCheck %s --check-prefix=OWNER
// RUN: shardc-opt %s --shardc-decompose-mean-loss --shardc-assign-stages="stages=2" --shardc-build-train-step --shardc-propagate-sharding="ranks=1 micro-batches=2" --shardc-partition="local-rows=2" --shardc-micro-batches="micro-batches=2" --shardc-split-stages="stages=2 stage=1 schedule=1f1b" | FileCheck %s --check-prefix=READER

// OWNER-LABEL: func.func @train_step(
// OWNER-SAME: %arg1: tensor<5x3xf32> {graph.param = "wte"}
// OWNER-SAME: {graph.state = "wte.exp_avg"}
// OWNER: %{{.*}}:2 = graph.send_recv %{{.*}} on @dp {mesh_axes = array<i16: 1>, recv_from = 1 : i64, send_to = 1 : i64} : (tensor<2x3xf32>) -> (tensor<5x3xf32>, tensor<2x3xf32>)
// OWNER: %{{.*}}:2 = graph.send_recv  on @dp {mesh_axes = array<i16: 1>, recv_from = 1 : i64} : () -> (tensor<5x3xf32>, tensor<2x3xf32>)
// OWNER: %[[NEW:.*]], %{{.*}}, %{{.*}} = graph.adamw_update %arg1,
// OWNER: graph.send_recv %[[NEW]] on @dp {mesh_axes = array<i16: 1>, send_to = 1 : i64} : (tensor<5x3xf32>) -> ()
// OWNER-NEXT: return %{{.*}}, %[[NEW]],

// READER-LABEL: func.func @train_step(
// READER-SAME: %arg1: tensor<5x3xf32> {graph.param = "wte", graph.pipeline_copy = 0 : i64}
// READER-NOT: wte.exp_avg
// READER: graph.send_recv %{{.*}}, %{{.*}} on @dp {mesh_axes = array<i16: 1>, recv_from = 0 : i64, send_to = 0 : i64} : (tensor<5x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// READER: graph.send_recv %{{.*}}, %{{.*}} on @dp {mesh_axes = array<i16: 1>, send_to = 0 : i64} : (tensor<5x3xf32>, tensor<2x3xf32>) -> ()
// READER-NOT: graph.adamw_update %arg1,
// READER: %[[COPY:.*]] = graph.send_recv  on @dp {mesh_axes = array<i16: 1>, recv_from = 0 : i64} : () -> tensor<5x3xf32>
// READER-NEXT: return %{{.*}}, %[[COPY]],
func.func @forward(%x: tensor<4xi64> {graph.input = "x"}, %y: tensor<4xi64> {graph.input = "y"},
                   %wte: tensor<5x3xf32> {graph.param = "wte"}, %w0: tensor<3x3xf32> {graph.param = "w0"},
                   %w1: tensor<3x3xf32> {graph.param = "w1"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.gather %wte, %x {axis = 0 : i64} : (tensor<5x3xf32>, tensor<4xi64>) -> tensor<4x3xf32> loc("/wte/Gather")
  %h0 = graph.matmul %e, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.0/MatMul")
  %h1 = graph.matmul %h0, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.1/MatMul")
  %wt = graph.transpose %wte {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32> loc("/lm_head/Transpose")
  %s = graph.matmul %h1, %wt : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("/lm_head/MatMul")
  %l, %lp = graph.softmax_cross_entropy_loss %s, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>) loc("/loss")
  return %l : tensor<f32>
}
