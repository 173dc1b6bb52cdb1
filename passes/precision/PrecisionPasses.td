//===- PrecisionPasses.td - shardc passes: precision and recomputation -------------------===//
//
// 16-bit rounding and storage (--precision), recomputation (--remat)
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_PRECISION_PRECISIONPASSES_TD
#define SHARDC_PASSES_PRECISION_PRECISIONPASSES_TD

include "mlir/Pass/PassBase.td"

def BF16Matmuls : Pass<"shardc-bf16-matmuls", "mlir::func::FuncOp"> {
  let summary = "Round every matrix product's operands and result to bf16 or f16 (--precision)";
  let description = [{
    Each f32 operand of `graph.matmul` and `graph.gemm` (activations, weights, Gemm's bias)
    is replaced by its value rounded to bf16, an f32 -> bf16 -> f32 cast pair made once per
    value (a weight read by several products is cast once), and every reader of the product
    reads it rounded the same way. The products accumulate in f32, as a bf16 GEMM with an f32
    accumulator does; LayerNorm, softmax, the loss and the optimizer stay f32, and trained
    parameters stay f32 master weights. Runs on the forward function before the training
    step is built: the casts' gradient rule then rounds the gradients that flow back through
    them to bf16, as PyTorch's autograd does for `.to(torch.bfloat16)`.

    Before:
    ```mlir
    %y = graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %z = graph.relu %y : tensor<2x3xf32>
    ```
    After:
    ```mlir
    %xh = graph.cast %x {to = bf16} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
    %xr = graph.cast %xh {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
    %wh = graph.cast %w {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
    %wr = graph.cast %wh {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
    %y = graph.matmul %xr, %wr : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %yh = graph.cast %y {to = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
    %yr = graph.cast %yh {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
    %z = graph.relu %yr : tensor<2x3xf32>
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"bf16\"",
           "the 16-bit type the products round to: bf16, or f16 (--precision fp16)">,
  ];
}

def HalfStorage : Pass<"shardc-half-storage", "mlir::func::FuncOp"> {
  let summary = "Store the 16-bit values of --precision bf16/fp16 in 16 bits";
  let description = [{
    shardc-bf16-matmuls writes the precision policy as cast pairs (f32 -> bf16 -> f32) around
    every matrix product, so that autodiff and the sharding passes see ordinary f32 ops. This
    pass, run on a rank's training step after them, makes the 16-bit values real storage
    without changing a bit of the result:
      * a rounding cast (f32 -> 16-bit) moves above the data-movement ops (reshape,
        transpose, flatten, squeeze, unsqueeze, identity) and the ZeRO-3 `graph.all_gather`
        whose every reader rounds their result, so a weight is rounded once as its flat shard
        and the all-gather and transposes move 16-bit elements (half the bytes);
      * a widening cast (16-bit -> f32) moves below the data-movement ops that read it;
      * a matrix product reads the 16-bit values of its widened operands directly, and
        produces its result in 16 bits when every reader rounds it (not, for instance, a
        partial sum that a tensor-parallel all-reduce adds up first).
    Casts and data movement commute exactly, and a product's kernel widens 16-bit operands,
    accumulates in f32 and rounds its result to nearest-even: the f32 product of the rounded
    operands, rounded, which is what the cast pairs computed. With `reduce-dtype=bf16`
    (--reduce-dtype bf16) the gradients' data-parallel reductions (`graph.all_reduce`,
    `graph.reduce_scatter`) also run in the 16-bit type: their operands are rounded before
    them and widened after, half the bytes on the wire, each partial sum rounded.

    Before:
    ```mlir
    %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %wh = graph.cast %wt {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
    %wr = graph.cast %wh {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
    %y = graph.matmul %xr, %wr : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %yh = graph.cast %y {to = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
    %yr = graph.cast %yh {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
    ```
    After (with %xh the 16-bit value %xr widened):
    ```mlir
    %wh = graph.cast %w {to = bf16} : (tensor<3x4xf32>) -> tensor<3x4xbf16>
    %wt = graph.transpose %wh {perm = array<i64: 1, 0>} : (tensor<3x4xbf16>) -> tensor<4x3xbf16>
    %y = graph.matmul %xh, %wt : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
    %yr = graph.cast %y {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
    ```
  }];
  let options = [
    Option<"reduceDtype", "reduce-dtype", "std::string", "\"f32\"",
           "the element type of the gradients' data-parallel reductions: f32, bf16 or f16">,
  ];
}

def Remat : Pass<"shardc-remat", "mlir::func::FuncOp"> {
  let summary = "Recompute forward values in the backward pass instead of keeping them (--remat)";
  let description = [{
    Runs on the training step (after shardc-build-train-step). The backward pass reads values
    the forward pass computed; each group of forward ops is computed again, by clones of the
    same ops on the same operands (`/remat` locations), right before the first backward op
    that reads one of the group's values, and the backward pass reads the clones, so the
    originals die after their last forward use. The clones run the same kernels on the same
    inputs: the step's results are bit-identical, dropout included (its mask is keyed on seed,
    step, stream and element). `mode`:
      full       per unit (a repeated module: the node name up to its first component ending
                 in ".N", e.g. "/transformer/h.3"), everything the unit computes: a unit keeps
                 only what it reads from outside (its input, parameters)
      selective  per attention core: a product of two activations (Q K^T) and the ops after
                 it of the same size (scale, mask, softmax, dropout) that another product of
                 two activations reads (the probabilities times V); Q, K and V stay
    `graph.remat` on the function says, per unit or core, the bytes it keeps for the backward
    pass without recomputation, the bytes recomputed and the matrix-product FLOPs added.

    Before (full, one unit "/h.0"):
    ```mlir
    %a = graph.matmul %x, %w loc("/h.0/fc/MatMul")
    %y = graph.tanh %a loc("/h.0/Tanh")
    ... loss ...
    %gy = graph.tanh_grad %dy, %y                 // the backward pass reads %y
    ```
    After:
    ```mlir
    %a = graph.matmul %x, %w loc("/h.0/fc/MatMul")
    %y = graph.tanh %a loc("/h.0/Tanh")
    ... loss ...
    %a2 = graph.matmul %x, %w loc("/h.0/fc/MatMul/remat")
    %y2 = graph.tanh %a2 loc("/h.0/Tanh/remat")
    %gy = graph.tanh_grad %dy, %y2
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"none\"", "none, full or selective">,
    Option<"units", "units", "int64_t", "-1",
           "only the first N units (forward order) take the mode, the rest the next lighter "
           "one (full -> selective -> none); -1: every unit (--remat auto's per-unit plans)">,
  ];
}

#endif
