// RUN: shardc-opt %s -split-input-file --shardc-row-local-gather | FileCheck %s

// CLIP's text pooling: each row's state at its argmax, gathered from the flattened batch at
// argmax + [0, S]. The gather becomes a masked sum over each row's own positions.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: graph.gather
// CHECK: %[[POS:.*]] = graph.arg_max %arg1 {axis = 1 : i64, keepdims = false
// CHECK: %[[STEPS:.*]] = graph.constant dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>
// CHECK: %[[COL:.*]] = graph.reshape %[[POS]] : (tensor<2xi64>) -> tensor<2x1xi64>
// CHECK: %[[HIT:.*]] = graph.equal %[[COL]], %[[STEPS]] : (tensor<2x1xi64>, tensor<1x4xi64>) -> tensor<2x4xi1>
// CHECK: %[[MASK:.*]] = graph.reshape %[[HIT]] : (tensor<2x4xi1>) -> tensor<2x4x1xi1>
// CHECK: %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[PICKED:.*]] = graph.where %[[MASK]], %arg0, %[[ZERO]] : (tensor<2x4x1xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
// CHECK: graph.reduce_sum %[[PICKED]] {axes = array<i64: 1>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<2x8xf32>
func.func @forward(%h: tensor<2x4x8xf32> {graph.input = "h"}, %ids: tensor<2x4xi64> {graph.input = "ids"}) -> (tensor<2x8xf32> {graph.output = "pooled"}) {
  %p = graph.arg_max %ids {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<2x4xi64>) -> tensor<2xi64>
  %f = graph.flatten %h : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %o = graph.constant dense<[0, 4]> : tensor<2xi64>
  %i = graph.add %p, %o : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %g = graph.gather %f, %i {axis = 0 : i64} : (tensor<8x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// Offsets that are not each row's start ([0, 3] with rows of 4) may read another row: the
// gather stays.
// CHECK-LABEL: func.func @forward(
// CHECK: graph.gather
// CHECK-NOT: graph.reduce_sum
func.func @forward(%h: tensor<2x4x8xf32> {graph.input = "h"}, %ids: tensor<2x4xi64> {graph.input = "ids"}) -> (tensor<2x8xf32> {graph.output = "pooled"}) {
  %p = graph.arg_max %ids {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<2x4xi64>) -> tensor<2xi64>
  %f = graph.flatten %h : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %o = graph.constant dense<[0, 3]> : tensor<2xi64>
  %i = graph.add %p, %o : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %g = graph.gather %f, %i {axis = 0 : i64} : (tensor<8x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// Positions that are not an arg_max over the row (an input) have no known range: the gather
// stays.
// CHECK-LABEL: func.func @forward(
// CHECK: graph.gather
func.func @forward(%h: tensor<2x4x8xf32> {graph.input = "h"}, %p: tensor<2xi64> {graph.input = "p"}) -> (tensor<2x8xf32> {graph.output = "pooled"}) {
  %f = graph.flatten %h : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %o = graph.constant dense<[0, 4]> : tensor<2xi64>
  %i = graph.add %o, %p : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %g = graph.gather %f, %i {axis = 0 : i64} : (tensor<8x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}
