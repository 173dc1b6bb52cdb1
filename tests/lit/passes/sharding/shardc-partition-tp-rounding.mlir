// RUN: shardc-opt %s '--shardc-propagate-sharding=ranks=2 tp=2 shard=w2=[{tp},{}]' --shardc-partition | FileCheck %s

// --precision bf16's rounding of a tensor-parallel partial product (the row-parallel w2):
// rounding each device's part would change the forward pass, so the partial sum over tp is
// all-reduced first and the whole product rounded, as on one device. (A sum over the batch
// instead stays pending through the rounding: shardc-partition.mlir.)
// CHECK-LABEL: func.func @forward(
// CHECK: %[[Y:.*]] = graph.matmul {{.*}}partial = sum[1]>]}
// CHECK-NEXT: %[[R:.*]] = mesh.all_reduce %[[Y]] on @mesh mesh_axes = [1]
// CHECK-NEXT: %[[H:.*]] = graph.cast %[[R]] {graph.shardings = [#mesh.shard<@mesh, {{\[\[}}0]]>], to = bf16}
// CHECK-NEXT: graph.cast %[[H]] {{.*}}to = f32}
func.func @forward(%x: tensor<8x8xf32> {graph.input = "x"}, %w1: tensor<8x8xf32> {graph.param = "w1"}, %w2: tensor<8x8xf32> {graph.param = "w2"}) -> (tensor<f32> {graph.output = "loss"}) {
  %h = graph.matmul %x, %w1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = graph.relu %h : tensor<8x8xf32>
  %y = graph.matmul %a, %w2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %yh = graph.cast %y {to = bf16} : (tensor<8x8xf32>) -> tensor<8x8xbf16>
  %yr = graph.cast %yh {to = f32} : (tensor<8x8xbf16>) -> tensor<8x8xf32>
  %l = graph.reduce_sum %yr {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
