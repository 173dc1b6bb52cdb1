// Three layers (/h.0, /h.1, /h.2) cut into two stages balanced by FLOPs: the two 3x3 layers
// (and the op before the first layer) against the 3x5 layer and the loss after it. The ops
// outside the layers follow their operands (the loss) or their first reader (the embedding).
// RUN: shardc-opt %s -split-input-file --shardc-assign-stages="stages=2" | FileCheck %s
// --pp-cuts moves the cut: stage 1 starts at the layer named /h.1.
// RUN: shardc-opt %s -split-input-file --shardc-assign-stages="stages=2 cuts=/h.1" | FileCheck %s --check-prefix=CUTS
// Refused in one line: more stages than layers, a prefix that starts no layer, a count of
// prefixes that is not stages - 1.
// RUN: not shardc-opt %s -split-input-file --shardc-assign-stages="stages=4" 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: not shardc-opt %s -split-input-file --shardc-assign-stages="stages=2 cuts=/h.9" 2>&1 | FileCheck %s --check-prefix=PREFIX
// RUN: not shardc-opt %s -split-input-file --shardc-assign-stages="stages=3 cuts=/h.1" 2>&1 | FileCheck %s --check-prefix=COUNT

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: graph.pipeline_stages = ["stage 0: layers /h.0 .. /h.1 (2), 3 forward ops, 156 FLOP forward", "stage 1: layers /h.2 (1), 2 forward ops, 140 FLOP forward"]
// CHECK: graph.relu %arg0 {graph.stage = 0 : i64}
// CHECK: graph.matmul %{{.*}}, %arg2 {graph.stage = 0 : i64}
// CHECK: graph.matmul %{{.*}}, %arg3 {graph.stage = 0 : i64}
// CHECK: graph.matmul %{{.*}}, %arg4 {graph.stage = 1 : i64}
// CHECK: graph.softmax_cross_entropy_loss {{.*}}graph.stage = 1 : i64

// CUTS-LABEL: func.func @forward(
// CUTS: graph.relu %arg0 {graph.stage = 0 : i64}
// CUTS: graph.matmul %{{.*}}, %arg2 {graph.stage = 0 : i64}
// CUTS: graph.matmul %{{.*}}, %arg3 {graph.stage = 1 : i64}
// CUTS: graph.matmul %{{.*}}, %arg4 {graph.stage = 1 : i64}

// FEW: error: --strategy pp=4: the model has 3 repeated layers (node names with a '.N' module, e.g. '/h.3/') to cut between, fewer than the 4 stages
// PREFIX: error: --pp-cuts: '/h.9' starts no repeated layer (the layers are /h.0 .. /h.2)
// COUNT: error: --pp-cuts: 1 prefix for 3 stages (give 2)
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %y: tensor<4xi64> {graph.input = "y"},
                   %w0: tensor<3x3xf32> {graph.param = "w0"}, %w1: tensor<3x3xf32> {graph.param = "w1"},
                   %w2: tensor<3x5xf32> {graph.param = "w2"}) -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.relu %x : tensor<4x3xf32> loc("/embed/Relu")
  %h0 = graph.matmul %e, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.0/MatMul")
  %h1 = graph.matmul %h0, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/h.1/MatMul")
  %s = graph.matmul %h1, %w2 : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("/h.2/MatMul")
  %l, %lp = graph.softmax_cross_entropy_loss %s, %y {reduction = "mean", ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>) loc("/loss")
  return %l : tensor<f32>
}
