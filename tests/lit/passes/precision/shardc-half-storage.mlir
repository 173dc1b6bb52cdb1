// RUN: shardc-opt %s -split-input-file --shardc-half-storage | FileCheck %s
// RUN: shardc-opt %s -split-input-file --shardc-half-storage="reduce-dtype=bf16" | FileCheck %s --check-prefix=REDUCE
// RUN: not shardc-opt %s -split-input-file --shardc-half-storage="reduce-dtype=f8" 2>&1 | FileCheck %s --check-prefix=BADTYPE
// BADTYPE: error: shardc-half-storage: reduce-dtype 'f8': expected f32, bf16 or f16

// A linear layer under --precision bf16 (the cast pairs of shardc-bf16-matmuls): the weight
// is rounded before its transpose, which then moves bf16; the product reads both bf16 values
// and writes its result in bf16; only the relu's reader widens it. No f32 copy of a rounded
// value is left.
// CHECK-LABEL: func.func @linear
// CHECK-NEXT: %[[XH:.*]] = graph.cast %arg0 {to = bf16} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK-NEXT: %[[WH:.*]] = graph.cast %arg1 {to = bf16} : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// CHECK-NEXT: %[[WT:.*]] = graph.transpose %[[WH]] {perm = array<i64: 1, 0>} : (tensor<3x4xbf16>) -> tensor<4x3xbf16>
// CHECK-NEXT: %[[Y:.*]] = graph.matmul %[[XH]], %[[WT]] : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
// CHECK-NEXT: %[[YR:.*]] = graph.cast %[[Y]] {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[Z:.*]] = graph.relu %[[YR]] : tensor<2x3xf32>
// CHECK-NEXT: return %[[Z]]
func.func @linear(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %xh = graph.cast %x {to = bf16} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  %xr = graph.cast %xh {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %wh = graph.cast %wt {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
  %wr = graph.cast %wh {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  %y = graph.matmul %xr, %wr : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %yh = graph.cast %y {to = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  %yr = graph.cast %yh {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
  %z = graph.relu %yr : tensor<2x3xf32>
  return %z : tensor<2x3xf32>
}

// -----

// The backward pass's products read rounded values through reshapes and transposes (the
// weight gradient x^T . dy): the widening casts move below them, so the products read bf16.
// A value rounded again after moving (%ar: a bf16 value widened, transposed and rounded) is
// the bf16 value moved. The f16 type of --precision fp16 works the same way.
// CHECK-LABEL: func.func @through_movement
// CHECK-NEXT: %[[XR:.*]] = graph.reshape %arg0 : (tensor<2x2x4xbf16>) -> tensor<4x4xbf16>
// CHECK-NEXT: %[[XT:.*]] = graph.transpose %[[XR]] {perm = array<i64: 1, 0>} : (tensor<4x4xbf16>) -> tensor<4x4xbf16>
// CHECK-NEXT: %[[DW:.*]] = graph.matmul %[[XT]], %arg1 : (tensor<4x4xbf16>, tensor<4x3xbf16>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[AT:.*]] = graph.transpose %arg2 {perm = array<i64: 1, 0>} : (tensor<3x2xf16>) -> tensor<2x3xf16>
// CHECK-NEXT: %[[P:.*]] = graph.matmul %[[AT]], %arg3 : (tensor<2x3xf16>, tensor<3x2xf16>) -> tensor<2x2xf16>
// CHECK-NEXT: %[[PW:.*]] = graph.cast %[[P]] {to = f32}
// CHECK-NEXT: return %[[DW]], %[[PW]]
func.func @through_movement(%x: tensor<2x2x4xbf16>, %dy: tensor<4x3xbf16>, %a: tensor<3x2xf16>, %b: tensor<3x2xf16>) -> (tensor<4x3xf32>, tensor<2x2xf32>) {
  %xw = graph.cast %x {to = f32} : (tensor<2x2x4xbf16>) -> tensor<2x2x4xf32>
  %dyw = graph.cast %dy {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  %xr = graph.reshape %xw : (tensor<2x2x4xf32>) -> tensor<4x4xf32>
  %xt = graph.transpose %xr {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dw = graph.matmul %xt, %dyw : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %aw = graph.cast %a {to = f32} : (tensor<3x2xf16>) -> tensor<3x2xf32>
  %at = graph.transpose %aw {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %ah = graph.cast %at {to = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  %ar = graph.cast %ah {to = f32} : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %bw = graph.cast %b {to = f32} : (tensor<3x2xf16>) -> tensor<3x2xf32>
  %p = graph.matmul %ar, %bw : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %ph = graph.cast %p {to = f16} : (tensor<2x2xf32>) -> tensor<2x2xf16>
  %pw = graph.cast %ph {to = f32} : (tensor<2x2xf16>) -> tensor<2x2xf32>
  return %dw, %pw : tensor<4x3xf32>, tensor<2x2xf32>
}

// -----

// ZeRO-3: a weight whose every reader rounds it (through its transpose) is rounded as its
// flat shard, and the all-gather moves bf16; a weight also read in f32 (the LayerNorm scale
// here, read by a mul) is gathered in f32. A tensor-parallel partial product stays f32 until
// the all-reduce has summed it (rounding partial sums would change the result); its operands
// are still read in bf16.
// CHECK-LABEL: func.func @zero3_and_tp
// CHECK-NEXT: %[[WS:.*]] = graph.cast %arg0 {to = bf16} : (tensor<6xf32>) -> tensor<6xbf16>
// CHECK-NEXT: %[[G:.*]]:2 = graph.all_gather %[[WS]], %arg1 on @mesh {mesh_axes = array<i16: 0>} : (tensor<6xbf16>, tensor<2xf32>) -> (tensor<3x4xbf16>, tensor<4xf32>)
// CHECK-NEXT: %[[S:.*]] = graph.mul %arg2, %[[G]]#1
// CHECK-NEXT: %[[SH:.*]] = graph.cast %[[S]] {to = bf16}
// CHECK-NEXT: %[[WT:.*]] = graph.transpose %[[G]]#0 {perm = array<i64: 1, 0>} : (tensor<3x4xbf16>) -> tensor<4x3xbf16>
// CHECK-NEXT: %[[Y:.*]] = graph.matmul %[[SH]], %[[WT]] : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[R:.*]] = mesh.all_reduce %[[Y]] on @mesh mesh_axes = [1]
// CHECK-NEXT: %[[RH:.*]] = graph.cast %[[R]] {to = bf16}
// CHECK-NEXT: %[[RW:.*]] = graph.cast %[[RH]] {to = f32}
// CHECK-NEXT: return %[[RW]]
mesh.mesh @mesh(shape = 2x2)
func.func @zero3_and_tp(%w: tensor<6xf32>, %g: tensor<2xf32>, %x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %full:2 = graph.all_gather %w, %g on @mesh {mesh_axes = array<i16: 0>} : (tensor<6xf32>, tensor<2xf32>) -> (tensor<3x4xf32>, tensor<4xf32>)
  %s = graph.mul %x, %full#1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %sh = graph.cast %s {to = bf16} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  %sr = graph.cast %sh {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  %wt = graph.transpose %full#0 {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %wh = graph.cast %wt {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
  %wr = graph.cast %wh {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  %y = graph.matmul %sr, %wr : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %r = mesh.all_reduce %y on @mesh mesh_axes = [1] : tensor<2x3xf32> -> tensor<2x3xf32>
  %rh = graph.cast %r {to = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  %rw = graph.cast %rh {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
  return %rw : tensor<2x3xf32>
}

// -----

// Gradient reductions: f32 by default; with reduce-dtype=bf16 the reduce-scatter reads the
// bf16 gradient a product wrote (no rounding needed) and rounds an f32 sum of two uses, and its
// results are widened for the optimizer.
// CHECK-LABEL: func.func @reductions
// CHECK: graph.reduce_scatter %{{.*}}, %{{.*}} on @dp : (tensor<4x3xf32>, tensor<4xf32>) -> (tensor<6xf32>, tensor<2xf32>)
// REDUCE-LABEL: func.func @reductions
// REDUCE-NEXT: %[[DW:.*]] = graph.matmul %arg0, %arg1 : (tensor<4x4xbf16>, tensor<4x3xbf16>) -> tensor<4x3xbf16>
// REDUCE-NEXT: %[[DB:.*]] = graph.add %arg2, %arg2
// REDUCE-NEXT: %[[DBH:.*]] = graph.cast %[[DB]] {to = bf16} : (tensor<4xf32>) -> tensor<4xbf16>
// REDUCE-NEXT: %[[RS:.*]]:2 = graph.reduce_scatter %[[DW]], %[[DBH]] on @dp : (tensor<4x3xbf16>, tensor<4xbf16>) -> (tensor<6xbf16>, tensor<2xbf16>)
// REDUCE-NEXT: %[[W1:.*]] = graph.cast %[[RS]]#1 {to = f32} : (tensor<2xbf16>) -> tensor<2xf32>
// REDUCE-NEXT: %[[W0:.*]] = graph.cast %[[RS]]#0 {to = f32} : (tensor<6xbf16>) -> tensor<6xf32>
// REDUCE-NEXT: return %[[W0]], %[[W1]]
mesh.mesh @dp(shape = 2)
func.func @reductions(%x: tensor<4x4xbf16>, %dy: tensor<4x3xbf16>, %db: tensor<4xf32>) -> (tensor<6xf32>, tensor<2xf32>) {
  %xw = graph.cast %x {to = f32} : (tensor<4x4xbf16>) -> tensor<4x4xf32>
  %dyw = graph.cast %dy {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  %dw = graph.matmul %xw, %dyw : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %dwh = graph.cast %dw {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
  %dwr = graph.cast %dwh {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  %sum = graph.add %db, %db : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %rs:2 = graph.reduce_scatter %dwr, %sum on @dp : (tensor<4x3xf32>, tensor<4xf32>) -> (tensor<6xf32>, tensor<2xf32>)
  return %rs#0, %rs#1 : tensor<6xf32>, tensor<2xf32>
}
