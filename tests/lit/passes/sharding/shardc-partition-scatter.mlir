// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" --shardc-partition -verify-diagnostics | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-propagate-sharding="ranks=2" --shardc-partition="local-rows=3" -verify-diagnostics | FileCheck %s --check-prefix=ROWS3

// The label shift of BART and T5 (`shifted[:, 1:] = labels[:, :-1]; shifted[:, 0] = start`):
// each index tuple's first entry is its row, so the batch splits through both scatters and
// each device scatters its rows with the first block of the indices, the local positions.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<2x5xi64> {graph.input = "labels", graph.sharding = #mesh.shard<@dp, {{\[\[}}0]]>}
// CHECK: %[[I1:.*]] = graph.constant dense<{{\[\[\[}}0, 1], [0, 2], [0, 3], [0, 4]], {{\[\[}}1, 1], [1, 2], [1, 3], [1, 4]]]> : tensor<2x4x2xi64>
// CHECK: graph.scatter_nd %{{.*}}, %[[I1]], %{{.*}} : (tensor<2x5xi64>, tensor<2x4x2xi64>, tensor<2x4xi64>) -> tensor<2x5xi64>
// CHECK: %[[I2:.*]] = graph.constant dense<{{\[\[\[}}0, 0]], {{\[\[}}1, 0]]]> : tensor<2x1x2xi64>
// CHECK: graph.scatter_nd %{{.*}}, %[[I2]], %{{.*}} : (tensor<2x5xi64>, tensor<2x1x2xi64>, tensor<2x1xi64>) -> tensor<2x5xi64>
// ROWS3-LABEL: func.func @forward(
// ROWS3: %[[I1:.*]] = graph.constant dense<{{\[\[\[}}0, 1], [0, 2], [0, 3], [0, 4]], {{\[\[}}1, 1], [1, 2], [1, 3], [1, 4]], {{\[\[}}2, 1], [2, 2], [2, 3], [2, 4]]]> : tensor<3x4x2xi64>
// ROWS3: graph.scatter_nd %{{.*}}, %[[I1]], %{{.*}} : (tensor<3x5xi64>, tensor<3x4x2xi64>, tensor<3x4xi64>) -> tensor<3x5xi64>
func.func @forward(%labels: tensor<4x5xi64> {graph.input = "labels"}, %x: tensor<4x5x8xf32> {graph.input = "x"},
                       %w: tensor<16x8xf32> {graph.param = "w"}) -> (tensor<f32> {graph.output = "loss"}) {
  %zeros = graph.constant dense<0> : tensor<4x5xi64>
  %head = graph.slice %labels {starts = array<i64: 0, 0>, ends = array<i64: 4, 4>, steps = array<i64: 1, 1>} : (tensor<4x5xi64>) -> tensor<4x4xi64>
  %i1 = graph.constant dense<[[[0, 1], [0, 2], [0, 3], [0, 4]], [[1, 1], [1, 2], [1, 3], [1, 4]], [[2, 1], [2, 2], [2, 3], [2, 4]], [[3, 1], [3, 2], [3, 3], [3, 4]]]> : tensor<4x4x2xi64>
  %s1 = graph.scatter_nd %zeros, %i1, %head {reduction = "none"} : (tensor<4x5xi64>, tensor<4x4x2xi64>, tensor<4x4xi64>) -> tensor<4x5xi64>
  %i2 = graph.constant dense<[[[0, 0]], [[1, 0]], [[2, 0]], [[3, 0]]]> : tensor<4x1x2xi64>
  %start = graph.constant dense<2> : tensor<4x1xi64>
  %s2 = graph.scatter_nd %s1, %i2, %start {reduction = "none"} : (tensor<4x5xi64>, tensor<4x1x2xi64>, tensor<4x1xi64>) -> tensor<4x5xi64>
  %e = graph.gather %w, %s2 {axis = 0 : i64} : (tensor<16x8xf32>, tensor<4x5xi64>) -> tensor<4x5x8xf32>
  %y = graph.mul %e, %x : (tensor<4x5x8xf32>, tensor<4x5x8xf32>) -> tensor<4x5x8xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x5x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
