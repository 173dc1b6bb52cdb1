// RUN: shardc-opt %s -split-input-file --shardc-fold-transposes | FileCheck %s

// A linear layer's weight gradient as autodiff writes it, dW = Xᵀ·dY: the transpose of the
// flattened rows becomes trans_lhs and is gone. dX = dY·Wᵀ likewise becomes trans_rhs.
// CHECK-LABEL: func.func @linear_grads
// CHECK-SAME: (%[[X:.*]]: tensor<64x16xf32> {{.*}}, %[[W:.*]]: tensor<16x32xf32> {{.*}}, %[[DY:.*]]: tensor<64x32xf32> {{.*}})
// CHECK-NOT: graph.transpose
// CHECK: %[[DW:.*]] = graph.matmul %[[X]], %[[DY]] {trans_lhs} : (tensor<64x16xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[DX:.*]] = graph.matmul %[[DY]], %[[W]] {trans_rhs} : (tensor<64x32xf32>, tensor<16x32xf32>) -> tensor<64x16xf32>
// CHECK-NEXT: return %[[DW]], %[[DX]]
func.func @linear_grads(%x: tensor<64x16xf32> {graph.input = "x"}, %w: tensor<16x32xf32> {graph.input = "w"}, %dy: tensor<64x32xf32> {graph.input = "dy"}) -> (tensor<16x32xf32> {graph.output = "dw"}, tensor<64x16xf32> {graph.output = "dx"}) {
  %xt = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32>
  %dw = graph.matmul %xt, %dy : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %dx = graph.matmul %dy, %wt : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
  return %dw, %dx : tensor<16x32xf32>, tensor<64x16xf32>
}

// -----

// Batched attention products: Kᵀ over [batch, heads] folds into trans_rhs; a product whose
// operand is already read transposed clears the flag when that operand's transpose is folded
// too (Bᵀᵀ = B). A transpose that also moves a batch dimension stays.
// CHECK-LABEL: func.func @batched
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x8x4xf32> {{.*}}, %[[K:.*]]: tensor<2x3x8x4xf32> {{.*}})
// CHECK: %[[S:.*]] = graph.matmul %[[Q]], %[[K]] {trans_rhs} : (tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x8xf32>
// CHECK: %[[P:.*]] = graph.matmul %[[S]], %[[K]] : (tensor<2x3x8x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32>
// CHECK: %[[KM:.*]] = graph.transpose %[[K]] {perm = array<i64: 1, 0, 3, 2>}
// CHECK: %[[QB:.*]] = graph.transpose %[[Q]] {perm = array<i64: 1, 0, 2, 3>}
// CHECK: graph.matmul %[[QB]], %[[KM]] : (tensor<3x2x8x4xf32>, tensor<3x2x4x8xf32>) -> tensor<3x2x8x8xf32>
func.func @batched(%q: tensor<2x3x8x4xf32> {graph.input = "q"}, %k: tensor<2x3x8x4xf32> {graph.input = "k"}) -> (tensor<2x3x8x8xf32> {graph.output = "s"}, tensor<2x3x8x4xf32> {graph.output = "p"}, tensor<3x2x8x8xf32> {graph.output = "m"}) {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x8x4xf32>) -> tensor<2x3x4x8xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x8x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x8x8xf32>
  %ktt = graph.transpose %kt {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x4x8xf32>) -> tensor<2x3x8x4xf32>
  %p = graph.matmul %s, %ktt : (tensor<2x3x8x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32>
  %km = graph.transpose %k {perm = array<i64: 1, 0, 3, 2>} : (tensor<2x3x8x4xf32>) -> tensor<3x2x4x8xf32>
  %qb = graph.transpose %q {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x3x8x4xf32>) -> tensor<3x2x8x4xf32>
  %m = graph.matmul %qb, %km : (tensor<3x2x8x4xf32>, tensor<3x2x4x8xf32>) -> tensor<3x2x8x8xf32>
  return %s, %p, %m : tensor<2x3x8x8xf32>, tensor<2x3x8x4xf32>, tensor<3x2x8x8xf32>
}

// -----

// The gradient of a weight stored transposed (the export's Transpose(W) before MatMul): the
// transpose of the product's result becomes the product with its operands swapped,
// (Xᵀ·dY)ᵀ = dYᵀ·X, so both transposes are gone. A product read elsewhere too keeps its
// result's transpose.
// CHECK-LABEL: func.func @result_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<64x16xf32> {{.*}}, %[[DY:.*]]: tensor<64x32xf32> {{.*}})
// CHECK: %[[DWT:.*]] = graph.matmul %[[DY]], %[[X]] {trans_lhs} : (tensor<64x32xf32>, tensor<64x16xf32>) -> tensor<32x16xf32>
// CHECK: %[[G:.*]] = graph.matmul %[[X]], %[[DY]] {trans_lhs} : (tensor<64x16xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[GT:.*]] = graph.transpose %[[G]] {perm = array<i64: 1, 0>}
// CHECK: return %[[DWT]], %[[G]], %[[GT]]
func.func @result_transpose(%x: tensor<64x16xf32> {graph.input = "x"}, %dy: tensor<64x32xf32> {graph.input = "dy"}) -> (tensor<32x16xf32> {graph.output = "dwt"}, tensor<16x32xf32> {graph.output = "g"}, tensor<32x16xf32> {graph.output = "gt"}) {
  %xt = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32>
  %dw = graph.matmul %xt, %dy : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  %dwt = graph.transpose %dw {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %g = graph.matmul %xt, %dy : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  %gt = graph.transpose %g {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  return %dwt, %g, %gt : tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x16xf32>
}

// -----

// gemm: a transposed operand toggles trans_a / trans_b; a 1-D matmul operand is never read
// transposed (its transpose is not a swap of two dimensions).
// CHECK-LABEL: func.func @gemm_and_vector
// CHECK-SAME: (%[[A:.*]]: tensor<8x4xf32> {{.*}}, %[[B:.*]]: tensor<6x8xf32> {{.*}}, %[[V:.*]]: tensor<8xf32> {{.*}})
// CHECK: graph.gemm %[[A]], %[[B]] {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_a = true, trans_b = true}
// CHECK: graph.matmul %[[B]], %[[V]] : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6xf32>
func.func @gemm_and_vector(%a: tensor<8x4xf32> {graph.input = "a"}, %b: tensor<6x8xf32> {graph.input = "b"}, %v: tensor<8xf32> {graph.input = "v"}) -> (tensor<4x6xf32> {graph.output = "y"}, tensor<6xf32> {graph.output = "z"}) {
  %at = graph.transpose %a {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %y = graph.gemm %at, %b {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_a = false, trans_b = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %z = graph.matmul %b, %v : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6xf32>
  return %y, %z : tensor<4x6xf32>, tensor<6xf32>
}

// -----

// Casts read once between a transpose and the product (the rounding pair --half-storage off
// keeps in f32, or a cast to bf16) commute with it: the casts are rewritten to the weight's own
// layout and the product reads their result transposed, on the operand side and on the
// result side alike.
// CHECK-LABEL: func.func @through_casts
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32> {{.*}}, %[[W:.*]]: tensor<16x32xf32> {{.*}}, %[[DY:.*]]: tensor<8x16xf32> {{.*}})
// CHECK-NOT: graph.transpose
// CHECK: %[[R1:.*]] = graph.cast %[[W]] {to = bf16} : (tensor<16x32xf32>) -> tensor<16x32xbf16>
// CHECK: %[[R2:.*]] = graph.cast %[[R1]] {to = f32} : (tensor<16x32xbf16>) -> tensor<16x32xf32>
// CHECK: %[[Y:.*]] = graph.matmul %[[X]], %[[R2]] {trans_rhs} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
// CHECK: %[[G:.*]] = graph.matmul %[[DY]], %[[X]] {trans_lhs} : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[GB:.*]] = graph.cast %[[G]] {to = bf16} : (tensor<16x32xf32>) -> tensor<16x32xbf16>
// CHECK: return %[[Y]], %[[GB]]
func.func @through_casts(%x: tensor<8x32xf32> {graph.input = "x"}, %w: tensor<16x32xf32> {graph.input = "w"}, %dy: tensor<8x16xf32> {graph.input = "dy"}) -> (tensor<8x16xf32> {graph.output = "y"}, tensor<16x32xbf16> {graph.output = "dw"}) {
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %r1 = graph.cast %wt {to = bf16} : (tensor<32x16xf32>) -> tensor<32x16xbf16>
  %r2 = graph.cast %r1 {to = f32} : (tensor<32x16xbf16>) -> tensor<32x16xf32>
  %y = graph.matmul %x, %r2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %xt = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<8x32xf32>) -> tensor<32x8xf32>
  %g = graph.matmul %xt, %dy : (tensor<32x8xf32>, tensor<8x16xf32>) -> tensor<32x16xf32>
  %gb = graph.cast %g {to = bf16} : (tensor<32x16xf32>) -> tensor<32x16xbf16>
  %dw = graph.transpose %gb {perm = array<i64: 1, 0>} : (tensor<32x16xbf16>) -> tensor<16x32xbf16>
  return %y, %dw : tensor<8x16xf32>, tensor<16x32xbf16>
}
