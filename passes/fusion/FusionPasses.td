//===- FusionPasses.td - shardc passes: fusion -------------------------------------------===//
//
// Fusion of op chains into one op of the dialect (--fuse-attention)
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

#endif
