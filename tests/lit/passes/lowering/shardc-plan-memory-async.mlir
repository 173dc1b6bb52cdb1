// RUN: shardc-opt %s --shardc-build-train-step --shardc-place-on-mesh="ranks=3 zero=0" --shardc-all-reduce-gradients="bucket-mb=0.00002" --shardc-plan-memory | FileCheck %s
// RUN: shardc-opt %s --shardc-build-train-step --shardc-place-on-mesh="ranks=3 zero=0" --shardc-all-reduce-gradients="bucket-mb=0.00002" --shardc-plan-memory="overlap-collectives=false" | FileCheck %s --check-prefix=INORDER

// Two gradient buckets. fc2's (bucket 0) is reduced right after its gradient while the
// backward pass goes on to fc1's: asynchronous, its scratch from the communication workspace,
// and its first reader (fc2's update) far below. Bucket 1 comes after the last gradient and
// the very next op (fc1's update) reads it, as the loss's all_reduce is the last op: nothing
// to overlap, so both stay in order.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: shardc.comm_workspace_bytes = 60 : i64, shardc.workspace_bytes = 60 : i64
// CHECK: %[[DW2:.*]] = graph.matmul %{{.*}}, %{{.*}} {shardc.offsets = array<i64: [[DW2OFF:[0-9]+]]>} : (tensor<3x2xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[R0:.*]] = graph.all_reduce %[[DW2]] on @dp {bucket = 0 : i64, shardc.async, shardc.offsets = array<i64: [[R0OFF:[0-9]+]]>, shardc.workspace = 60 : i64}
// Until fc2's update reads the sum, no op writes over its operand's bytes or its result's.
// CHECK-NOT: shardc.offsets = array<i64: [[DW2OFF]]>
// CHECK-NOT: shardc.offsets = array<i64: [[R0OFF]]>
// CHECK: %[[R1:.*]]:2 = graph.all_reduce %{{.*}}, %{{.*}} on @dp {bucket = 1 : i64, shardc.offsets
// CHECK-NEXT: graph.adamw_update %{{.*}}, %[[R1]]#1
// CHECK: graph.adamw_update %{{.*}}, %[[R0]],
// CHECK: mesh.all_reduce %{{.*}} {shardc.offsets
// CHECK-NEXT: return

// INORDER-LABEL: func.func @train_step(
// INORDER-SAME: shardc.comm_workspace_bytes = 0 : i64
// INORDER-NOT: shardc.async
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
