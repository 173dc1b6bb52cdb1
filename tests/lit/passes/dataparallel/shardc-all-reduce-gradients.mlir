// RUN: shardc-opt %s --shardc-build-train-step="grad-clip=1.0" --shardc-place-on-mesh="ranks=3 zero=0" --shardc-all-reduce-gradients="bucket-mb=0.00002" | FileCheck %s
// RUN: shardc-opt %s --shardc-build-train-step --shardc-place-on-mesh="ranks=3 zero=0" --shardc-all-reduce-gradients | FileCheck %s --check-prefix=ONE
// RUN: not shardc-opt %s --shardc-build-train-step --shardc-place-on-mesh="ranks=3 zero=2" --shardc-all-reduce-gradients 2>&1 | FileCheck %s --check-prefix=STAGE

// Buckets of 20 bytes: fc2's gradient (60 bytes, finished first) fills bucket 0 and is
// reduced right after it is computed, while the backward pass goes on to fc1's.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[DW2:.*]] = graph.matmul %{{.*}}, %{{.*}} : (tensor<3x2xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[R0:.*]] = graph.all_reduce %[[DW2]] on @dp {bucket = 0 : i64} : (tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK: %[[DB1:.*]] = graph.reshape %{{.*}} : (tensor<1x3xf32>) -> tensor<3xf32>
// CHECK: %[[DW1:.*]] = graph.matmul %{{.*}}, %{{.*}} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[R1:.*]]:2 = graph.all_reduce %[[DB1]], %[[DW1]] on @dp {bucket = 1 : i64}
// The norm that clipping uses is the global one: it reads the sums.
// CHECK: %[[N:.*]] = graph.global_norm %[[R1]]#1, %[[R1]]#0, %[[R0]]
// CHECK: graph.scale_by_clip %[[R1]]#1, %[[N]]
// CHECK: %[[L:.*]] = mesh.all_reduce %{{.*}} on @dp mesh_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK: return %[[L]],

// The default 25 MiB: one bucket, after the last gradient.
// ONE-LABEL: func.func @train_step(
// ONE-COUNT-1: graph.all_reduce
// ONE-NOT: graph.all_reduce

// STAGE: error: all-reduce-gradients implements ZeRO stage 0, the step is placed for stage 2
func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %y: tensor<2xi64> {graph.input = "y"},
                   %w1: tensor<4x3xf32> {graph.param = "fc1.weight"}, %b1: tensor<3xf32> {graph.param = "fc1.bias"},
                   %w2: tensor<3x5xf32> {graph.param = "fc2.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %hb = graph.add %h, %b1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = graph.relu %hb : tensor<2x3xf32>
  %z = graph.matmul %r, %w2 : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "mean"} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x5xf32>)
  return %l : tensor<f32>
}
