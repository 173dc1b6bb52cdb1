// RUN: shardc-opt %s -split-input-file --shardc-bf16-matmuls | FileCheck %s
// --precision fp16 rounds to f16 the same way.
// RUN: shardc-opt %s -split-input-file --shardc-bf16-matmuls="dtype=f16" | FileCheck %s --check-prefix=F16
// RUN: not shardc-opt %s -split-input-file --shardc-bf16-matmuls="dtype=f8" 2>&1 | FileCheck %s --check-prefix=BADTYPE
// F16-LABEL: func.func @forward
// F16: %[[VH:.*]] = graph.cast %arg2 {to = f16} : (tensor<3x3xf32>) -> tensor<3x3xf16>
// F16-NEXT: graph.cast %[[VH]] {to = f32} : (tensor<3x3xf16>) -> tensor<3x3xf32>
// F16-NOT: bf16
// BADTYPE: error: shardc-bf16-matmuls: dtype 'f8': expected bf16 or f16

// Each product's operands and result are rounded to bf16 through an f32 -> bf16 -> f32 cast
// pair, once per value: the weight %v read by two products is cast once, and the rounded
// product %y feeds both the relu and the third product without a second rounding.
// CHECK-LABEL: func.func @forward
// CHECK: %[[VH:.*]] = graph.cast %arg2 {to = bf16} : (tensor<3x3xf32>) -> tensor<3x3xbf16>
// CHECK-NEXT: %[[V:.*]] = graph.cast %[[VH]] {to = f32} : (tensor<3x3xbf16>) -> tensor<3x3xf32>
// CHECK-NEXT: %[[WH:.*]] = graph.cast %arg1 {to = bf16}
// CHECK-NEXT: %[[W:.*]] = graph.cast %[[WH]] {to = f32}
// CHECK-NEXT: %[[XH:.*]] = graph.cast %arg0 {to = bf16}
// CHECK-NEXT: %[[X:.*]] = graph.cast %[[XH]] {to = f32}
// CHECK-NEXT: %[[Y:.*]] = graph.matmul %[[X]], %[[W]]
// CHECK-NEXT: %[[YH:.*]] = graph.cast %[[Y]] {to = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
// CHECK-NEXT: %[[YR:.*]] = graph.cast %[[YH]] {to = f32}
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[YR]]
// CHECK-NEXT: %[[RH:.*]] = graph.cast %[[R]] {to = bf16}
// CHECK-NEXT: %[[RR:.*]] = graph.cast %[[RH]] {to = f32}
// CHECK-NEXT: %[[Z:.*]] = graph.matmul %[[RR]], %[[V]]
// CHECK: graph.matmul %[[YR]], %[[V]]
// CHECK-NOT: graph.matmul
func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %w: tensor<4x3xf32> {graph.param = "w"}, %v: tensor<3x3xf32> {graph.param = "v"}) -> (tensor<2x3xf32> {graph.output = "y"}) {
  %y = graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %r = graph.relu %y : tensor<2x3xf32>
  %z = graph.matmul %r, %v : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %u = graph.matmul %y, %v : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %s = graph.add %z, %u : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

// Gemm's bias is an operand of the product: rounded too.
// CHECK-LABEL: func.func @gemm
// CHECK-DAG: %[[C:.*]] = graph.cast %{{.*}} {to = f32} : (tensor<3xbf16>) -> tensor<3xf32>
// CHECK: %[[G:.*]] = graph.gemm %{{.*}}, %{{.*}}, %[[C]]
// CHECK-NEXT: graph.cast %[[G]] {to = bf16}
func.func @gemm(%x: tensor<2x4xf32> {graph.input = "x"}, %w: tensor<3x4xf32> {graph.param = "w"}, %b: tensor<3xf32> {graph.param = "b"}) -> (tensor<2x3xf32> {graph.output = "y"}) {
  %y = graph.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
