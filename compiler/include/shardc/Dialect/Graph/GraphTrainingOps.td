//===- GraphTrainingOps.td - backward and optimizer ops ---------------------------------===//
//
// Ops that only appear in a training step: fused backward computations whose VJP is not a
// short composition of forward ops, and the optimizer updates. Each maps 1:1 to a runtime
// kernel of the same name (docs/kernels.md). Updated values are new SSA values: training
// state is functional in the IR.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRAPHTRAININGOPS_TD
#define SHARDC_DIALECT_GRAPH_GRAPHTRAININGOPS_TD

//===-------------------------------------------------------------------------------------===//
// Backward ops
//===-------------------------------------------------------------------------------------===//

def Graph_LayerNormGradOp : Graph_Op<"layer_norm_grad", [Graph_KernelAttributes, Pure]> {
  let summary = "Gradients of layer_norm w.r.t. its input, scale and bias";
  let arguments = (ins Graph_FloatTensor:$dy, Graph_FloatTensor:$input,
                   Graph_FloatTensor:$scale, Graph_FloatTensor:$mean,
                   Graph_FloatTensor:$inv_std_dev, ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Graph_FloatTensor:$dinput, Graph_FloatTensor:$dscale,
                  Graph_FloatTensor:$dbias);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_AttentionGradOp : Graph_Op<"attention_grad",
    [Graph_CostWith<["getFlops"]>, Graph_KernelAttributes, Pure]> {
  let summary = "Gradients of attention w.r.t. q, k and v (the mask gets none)";
  let description = [{
    Recomputes the probabilities tile by tile from q, k, the mask and the forward pass's lse
    (FlashAttention-2's backward), with dout the gradient of attention's output.
  }];
  let arguments = (ins Graph_FloatTensor:$q, Graph_FloatTensor:$k, Graph_FloatTensor:$v,
                   Optional<Graph_FloatTensor>:$mask, Graph_FloatTensor:$output,
                   Graph_FloatTensor:$lse, Graph_FloatTensor:$dout, F32Attr:$scale,
                   BoolAttr:$causal);
  let results = (outs Graph_FloatTensor:$dq, Graph_FloatTensor:$dk, Graph_FloatTensor:$dv);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class Graph_SoftmaxGradLikeOp<string mnemonic> :
    Graph_Op<mnemonic, [Graph_KernelAttributes, Pure, SameOperandsAndResultType]> {
  let arguments = (ins Graph_FloatTensor:$dy, Graph_FloatTensor:$output,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Graph_FloatTensor:$dinput);
  let assemblyFormat = "$dy `,` $output attr-dict `:` type($dinput)";
}
def Graph_SoftmaxGradOp : Graph_SoftmaxGradLikeOp<"softmax_grad"> {
  let summary = "dx = y * (dy - sum(dy * y, axis)) from softmax's output y";
}
def Graph_LogSoftmaxGradOp : Graph_SoftmaxGradLikeOp<"log_softmax_grad"> {
  let summary = "dx = dy - exp(y) * sum(dy, axis) from log_softmax's output y";
}

def Graph_GeluGradOp : Graph_Op<"gelu_grad",
    [Graph_KernelAttributes, Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of gelu w.r.t. its input";
  let arguments = (ins Graph_FloatTensor:$dy, Graph_FloatTensor:$input, StrAttr:$approximate);
  let results = (outs Graph_FloatTensor:$dinput);
  let assemblyFormat = "$dy `,` $input attr-dict `:` type($dinput)";
}

def Graph_SoftmaxCrossEntropyLossGradOp : Graph_Op<"softmax_cross_entropy_loss_grad",
    [Graph_KernelAttributes, Pure]> {
  let summary = "Gradient of softmax_cross_entropy_loss w.r.t. the scores";
  let arguments = (ins Graph_FloatTensor:$dloss, Graph_FloatTensor:$log_prob,
                   Graph_IndexTensor:$labels, Optional<Graph_FloatTensor>:$weights,
                   StrAttr:$reduction, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$dscores);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_NegativeLogLikelihoodLossGradOp : Graph_Op<"nll_loss_grad",
    [Graph_KernelAttributes, Pure]> {
  let summary = "Gradient of nll_loss w.r.t. its input (the result type gives the shape)";
  let arguments = (ins Graph_FloatTensor:$dloss, Graph_IndexTensor:$target,
                   Optional<Graph_FloatTensor>:$weight, StrAttr:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$dinput);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Graph_GatherGradOp : Graph_Op<"gather_grad", [Graph_KernelAttributes, Pure]> {
  let summary = "Scatter-add of dy into zeros shaped like gather's data (the result type)";
  let arguments = (ins Graph_FloatTensor:$dy, Graph_IndexTensor:$indices,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Graph_FloatTensor:$ddata);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Graph_ReduceMaxGradOp : Graph_Op<"reduce_max_grad", [Graph_KernelAttributes, Pure]> {
  let summary = "Routes dy to the maxima of x (ties share equally); result shaped like x";
  let arguments = (ins Graph_FloatTensor:$dy, Graph_FloatTensor:$input,
                   Graph_FloatTensor:$output, DenseI64ArrayAttr:$axes, BoolAttr:$keepdims);
  let results = (outs Graph_FloatTensor:$dinput);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Graph_SliceGradOp : Graph_Op<"slice_grad",
    [Graph_NoArithmetic,
     Graph_KernelCall<["getKernelName", "buildKernelCall"]>, Graph_ShardableWith<["localizeOp"]>,
     Pure]> {
  let summary = "Scatters dy into zeros shaped like the slice's input (the result type)";
  let arguments = (ins Graph_FloatTensor:$dy, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$steps);
  let results = (outs Graph_FloatTensor:$dinput);
  let assemblyFormat = "$dy attr-dict `:` functional-type(operands, results)";
}

// The backward of conv: the result types give the forward operands' shapes.
def Graph_ConvGradInputOp : Graph_Op<"conv_grad_input",
    [Graph_CostWith<["getFlops"]>, Graph_KernelAttributes, Pure]> {
  let summary = "Gradient of conv w.r.t. its input (a transposed convolution of dy)";
  let arguments = (ins Graph_FloatTensor:$dy, Graph_FloatTensor:$weight,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, ConfinedAttr<I64Attr, [IntPositive]>:$group);
  let results = (outs Graph_FloatTensor:$dinput);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}
def Graph_ConvGradWeightOp : Graph_Op<"conv_grad_weight",
    [Graph_CostWith<["getFlops"]>, Graph_KernelAttributes, Pure]> {
  let summary = "Gradient of conv w.r.t. its weight (dy correlated with the input)";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$dy,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, ConfinedAttr<I64Attr, [IntPositive]>:$group);
  let results = (outs Graph_FloatTensor:$dweight);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Graph_MaxPoolGradOp : Graph_Op<"max_pool_grad", [Graph_KernelAttributes, Pure]> {
  let summary = "Routes each dy element to its window's first maximum in x (PyTorch's rule)";
  let arguments = (ins Graph_FloatTensor:$dy, Graph_FloatTensor:$input,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations);
  let results = (outs Graph_FloatTensor:$dinput);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}
def Graph_AvgPoolGradOp : Graph_Op<"avg_pool_grad", [Graph_KernelAttributes, Pure]> {
  let summary = "Adjoint of avg_pool (the result type gives the input's shape)";
  let arguments = (ins Graph_FloatTensor:$dy, DenseI64ArrayAttr:$kernel_shape,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   BoolAttr:$count_include_pad);
  let results = (outs Graph_FloatTensor:$dinput);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===-------------------------------------------------------------------------------------===//
// Optimizer updates (PyTorch semantics, fp32 state). Hyperparameters are f64 because PyTorch
// keeps them as Python floats: 1 - 0.999 in double differs from 1 - float(0.999).
//===-------------------------------------------------------------------------------------===//

// Marker traits (GraphTraits.h) the passes test instead of listing the optimizer ops.
// The optimizer phase: the updates and the gradient clipping, once per step on whole gradients.
def Graph_OptimizerPhase : NativeOpTrait<"OptimizerPhase"> {
  let cppNamespace = "::shardc::graph::traits";
}
// An update of one parameter: operands (param, grad, state..., step, lr[, skip]).
def Graph_OptimizerUpdate : NativeOpTrait<"OptimizerUpdate"> {
  let cppNamespace = "::shardc::graph::traits";
}

def Graph_AdamWUpdateOp : Graph_Op<"adamw_update",
    [Graph_KernelAttributes, Pure, Graph_OptimizerPhase, Graph_OptimizerUpdate]> {
  let summary = "torch.optim.AdamW step for one parameter; `step` counts from 1";
  let description = [{
    With `skip` (an f32 scalar, dynamic loss scaling's found-inf flag), a nonzero value skips
    the step: every result is its input, as when GradScaler does not call optimizer.step().
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                   Graph_FloatTensor:$exp_avg, Graph_FloatTensor:$exp_avg_sq,
                   RankedTensorOf<[I64]>:$step, Graph_FloatTensor:$lr,
                   Optional<Graph_FloatTensor>:$skip,
                   F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps, F64Attr:$weight_decay);
  let results = (outs Graph_FloatTensor:$new_param, Graph_FloatTensor:$new_exp_avg,
                  Graph_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_SGDUpdateOp : Graph_Op<"sgd_update",
    [Graph_KernelAttributes, Pure, Graph_OptimizerPhase, Graph_OptimizerUpdate]> {
  let summary = "torch.optim.SGD step for one parameter; `step` counts from 1";
  let description = [{
    With `skip` (an f32 scalar), a nonzero value skips the step (as adamw_update's).
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                   Graph_FloatTensor:$momentum_buffer, RankedTensorOf<[I64]>:$step,
                   Graph_FloatTensor:$lr, Optional<Graph_FloatTensor>:$skip,
                   F64Attr:$momentum, F64Attr:$dampening,
                   F64Attr:$weight_decay, BoolAttr:$nesterov);
  let results = (outs Graph_FloatTensor:$new_param, Graph_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_GlobalNormOp : Graph_Op<"global_norm",
    [Graph_ShardableWith<["buildLocalForm"]>, Pure, Graph_OptimizerPhase]> {
  let summary = "The 2-norm of all operands together (as torch's clip_grad_norm_)";
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_FloatTensor:$norm);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Graph_ScaleByClipOp : Graph_Op<"scale_by_clip",
    [Graph_KernelAttributes, Pure, Graph_OptimizerPhase]> {
  let summary = "grad * min(max_norm / (total_norm + 1e-6), 1)";
  let arguments = (ins Graph_FloatTensor:$grad, Graph_FloatTensor:$total_norm,
                   F32Attr:$max_norm);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

#endif
