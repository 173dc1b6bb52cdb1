// ZeRO-3 with microbatches: a step of 4 rows on 2 data-parallel devices, each running its 2 rows
// as 2 microbatches of 1. Each unit is gathered for every microbatch's forward pass and again
// for its backward pass (named forward/mbK/<unit>, backward/mbK/<unit>), so whole parameters
// never live across the loop; each unit's gradients, summed over the microbatches, are
// reduce-scattered once.
// RUN: shardc-opt %s --shardc-decompose-mean-loss --shardc-build-train-step --shardc-propagate-sharding="ranks=2 micro-batches=2" --shardc-partition="local-rows=1" --shardc-micro-batches="micro-batches=2" --shardc-place-on-mesh="ranks=2 zero=3" --shardc-shard-parameters --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s

// CHECK-LABEL: func.func @train_step(
// Microbatch 0, forward pass: h.0 gathered, h.1 prefetched before h.0 computes, the head before
// h.1 computes.
// CHECK: %[[F0:.*]] = graph.all_gather %arg2 on @dp {unit = "h.0"} {{.*}}loc("forward/mb0/h.0"
// CHECK-NEXT: graph.all_gather %arg3 on @dp {unit = "h.1"} {{.*}}loc("forward/mb0/h.1"
// CHECK-NEXT: graph.matmul %{{.*}}, %[[F0]] {graph.micro_batch = 0 : i64
// CHECK: graph.all_gather %arg4 on @dp {unit = "head"} {{.*}}loc("forward/mb0/head"
// CHECK: graph.softmax_cross_entropy_loss {{.*}}graph.micro_batch = 0 : i64
// Microbatch 0, backward pass: the head and h.1 gathered again (h.0's weight has no backward
// use: the input x needs no gradient). Nothing is reduce-scattered before the last
// microbatch's gradients are added.
// CHECK: graph.all_gather %arg4 on @dp {unit = "head"} {{.*}}loc("backward/mb0/head"
// CHECK-NEXT: graph.all_gather %arg3 on @dp {unit = "h.1"} {{.*}}loc("backward/mb0/h.1"
// CHECK-NOT: graph.reduce_scatter
// Microbatch 1 gathers its own copies and reads only those.
// CHECK: %[[F1:.*]] = graph.all_gather %arg2 on @dp {unit = "h.0"} {{.*}}loc("forward/mb1/h.0"
// CHECK-NEXT: graph.all_gather %arg3 on @dp {unit = "h.1"} {{.*}}loc("forward/mb1/h.1"
// CHECK-NEXT: graph.matmul %{{.*}}, %[[F1]] {graph.micro_batch = 1 : i64
// CHECK: graph.all_gather %arg4 on @dp {unit = "head"} {{.*}}loc("forward/mb1/head"
// CHECK: graph.softmax_cross_entropy_loss {{.*}}graph.micro_batch = 1 : i64
// CHECK: graph.all_gather %arg4 on @dp {unit = "head"} {{.*}}loc("backward/mb1/head"
// CHECK-NEXT: graph.all_gather %arg3 on @dp {unit = "h.1"} {{.*}}loc("backward/mb1/h.1"
// Each unit's gradients, summed over both microbatches, are reduce-scattered once.
// CHECK: graph.reduce_scatter %{{.*}} on @dp {unit = "head"}
// CHECK: graph.reduce_scatter %{{.*}} on @dp {unit = "h.1"}
// CHECK: graph.reduce_scatter %{{.*}} on @dp {unit = "h.0"}
// CHECK-NOT: graph.all_gather
// CHECK: return
func.func @forward(%x: tensor<4x4xf32> {graph.input = "x"}, %y: tensor<4xi64> {graph.input = "y"},
                   %w0: tensor<4x4xf32> {graph.param = "h.0.weight"}, %w1: tensor<4x4xf32> {graph.param = "h.1.weight"},
                   %wh: tensor<4x3xf32> {graph.param = "head.weight"}) -> (tensor<f32> {graph.output = "loss"}) {
  %a0 = graph.matmul %x, %w0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r0 = graph.relu %a0 : tensor<4x4xf32>
  %a1 = graph.matmul %r0, %w1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %z = graph.matmul %a1, %wh : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %l, %lp = graph.softmax_cross_entropy_loss %z, %y {reduction = "mean"} : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
  return %l : tensor<f32>
}
