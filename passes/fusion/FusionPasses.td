//===- FusionPasses.td - shardc passes: fusion -------------------------------------------===//
//
// Fusion of op chains into one op of the dialect (--fuse-attention, --fuse-elementwise)
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_FUSION_FUSIONPASSES_TD
#define SHARDC_PASSES_FUSION_FUSIONPASSES_TD

include "mlir/Pass/PassBase.td"

def FuseAttention : Pass<"shardc-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Replace scaled dot-product attention chains with graph.attention (--fuse-attention)";
  let description = [{
    Runs on the imported forward function, before the training step is built. Walking back
    from each Softmax over the last axis whose only reader is the left operand of a MatMul
    with V, it matches masks (Add of a float mask; Where with a -inf, or after the scales a
    finite <= -2^100, constant fill), scales (Mul or Div by a positive constant scalar) and
    the MatMul Q·Kᵀ that starts the chain, every intermediate read once. The chain becomes one
    graph.attention op with the masks summed into one f32 tensor of their broadcast shape;
    its gradient (graph.attention_grad) recomputes the probabilities, so no S x Sk tensor is
    kept for the backward pass. Chains with anything else in them (dropout, casts, a mask that
    depends on a trained parameter) stay as they are. A mask whose value is known at compile
    time (constants; frozen buffers when the driver gives their values) and hides exactly the
    causal rule's keys becomes the op's causal flag (`causal = true`, no mask operand).

    Before:
    ```mlir
    %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : ...
    %s = graph.matmul %q, %kt : (tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>) -> ...
    %c = graph.constant dense<2.500000e-01> : tensor<f32>
    %t = graph.mul %s, %c : ...
    %m = graph.where %cond, %ninf, %t : (tensor<1x1x16x16xi1>, tensor<f32>, ...) -> ...
    %p = graph.softmax %m {axis = 3 : i64} : tensor<2x2x16x16xf32>
    %o = graph.matmul %p, %v : ...
    ```
    After:
    ```mlir
    %mask = graph.where %cond, %ninf, %zero : (tensor<1x1x16x16xi1>, ...) -> tensor<1x1x16x16xf32>
    %k = graph.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : ...
    %o, %lse = graph.attention %q, %k, %v, %mask {causal = false, scale = 2.500000e-01 : f32}
    ```
  }];
}

def FuseElementwise : Pass<"shardc-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Run chains of elementwise ops as one graph.fused_elementwise (--fuse-elementwise)";
  let description = [{
    Runs on one device's program, after the sharding, pipeline and precision passes and before
    plan-memory. Each chain of f32 elementwise ops (neg, abs, relu, sqrt, reciprocal, exp,
    log, tanh, erf, sin, cos, sigmoid, softplus, add, sub, mul, div, pow, max, min) and casts
    between f32, bf16 and f16, all with one result shape (other operands broadcast to it),
    becomes one graph.fused_elementwise op at the place of its last op, reading the chain's
    inputs once and writing only the values read outside it. Ops join a chain only within
    one part of the step (forward or backward, recomputed or not, one repeated unit, one
    microbatch or stage) and a window of ops, and only when nothing outside the chain reads
    one of its values before the chain's last op. Exact: each step computes in f32 what the
    op it replaces computes; a cast to bf16 or f16 rounds where it did.

    Before:
    ```mlir
    %1 = graph.div %x, %c1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %2 = graph.erf %1 : tensor<4x8xf32>
    %3 = graph.add %2, %c2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %4 = graph.mul %x, %3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    After:
    ```mlir
    %4 = graph.fused_elementwise %x, %c1, %c2 {args = array<i64: 0, 1, 3, -1, 4, 2, 0, 5>,
           ops = ["div", "erf", "add", "mul"], results = array<i64: 6>}
         : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
    ```
  }];
}

def FoldTransposes : Pass<"shardc-fold-transposes", "mlir::func::FuncOp"> {
  let summary = "Read the operands of products transposed instead of transposing them";
  let description = [{
    Runs on one device's program, after the sharding, pipeline and precision passes and before
    the elementwise fusion and plan-memory. A graph.transpose that swaps only the last two
    dimensions and feeds a graph.matmul becomes the product's trans_lhs / trans_rhs flag (a
    set flag is cleared); one feeding a 2-D graph.gemm toggles its trans_a / trans_b; a
    transpose of a matmul's result read nowhere else swaps the product's operands and toggles
    both flags ((X·Y)ᵀ = Yᵀ·Xᵀ). Transposes left unread are erased. Exact: the kernels
    (BLAS, cuBLASLt) multiply the same values, read in another order.

    Before:
    ```mlir
    %t = graph.transpose %a {perm = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32>
    %g = graph.matmul %t, %dy : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
    ```
    After:
    ```mlir
    %g = graph.matmul %a, %dy {trans_lhs} : (tensor<64x16xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
    ```
  }];
}

#endif
