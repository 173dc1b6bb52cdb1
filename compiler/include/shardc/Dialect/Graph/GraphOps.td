//===- GraphOps.td - graph dialect operations -------------------------------------------===//
//
// Result shapes are inferred (InferTypeOpInterface) wherever the operands and attributes
// determine them, so the generated verifier rejects any op whose declared result type
// disagrees with ONNX semantics. Ops whose result shape comes from a tensor's *values*
// (Reshape, Expand, ConstantOfShape, Range) carry the static result type and verify it.
//
//===-------------------------------------------------------------------------------------===//

#ifndef SHARDC_DIALECT_GRAPH_GRAPHOPS_TD
#define SHARDC_DIALECT_GRAPH_GRAPHOPS_TD

include "shardc/Dialect/Graph/GraphDialect.td"
include "shardc/Dialect/Graph/GraphAttributes.td"
include "shardc/Dialect/Graph/GradientInterface.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===-------------------------------------------------------------------------------------===//
// Constants
//===-------------------------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant",
    [Graph_NoArithmetic, Graph_NoKernel, Graph_ShardableWith<["localizeOp"]>, ConstantLike, Pure,
     InferTypeOpAdaptor]> {
  let summary = "ONNX Constant; also the result of every compile-time folded op";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===-------------------------------------------------------------------------------------===//
// Elementwise
//===-------------------------------------------------------------------------------------===//

class Graph_UnaryOp<string mnemonic, Type operandType, list<Trait> traits = []> :
    Graph_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                            Graph_Differentiable])> {
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Graph_NegOp : Graph_UnaryOp<"neg", Graph_Tensor> { let summary = "ONNX Neg"; }
def Graph_AbsOp : Graph_UnaryOp<"abs", Graph_Tensor> { let summary = "ONNX Abs"; }
def Graph_ReluOp : Graph_UnaryOp<"relu", Graph_Tensor> { let summary = "ONNX Relu"; }
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", Graph_FloatTensor> { let summary = "ONNX Sqrt"; }
def Graph_ReciprocalOp : Graph_UnaryOp<"reciprocal", Graph_FloatTensor> {
  let summary = "ONNX Reciprocal";
}
def Graph_ExpOp : Graph_UnaryOp<"exp", Graph_FloatTensor> { let summary = "ONNX Exp"; }
def Graph_LogOp : Graph_UnaryOp<"log", Graph_FloatTensor> { let summary = "ONNX Log"; }
def Graph_TanhOp : Graph_UnaryOp<"tanh", Graph_FloatTensor> { let summary = "ONNX Tanh"; }
def Graph_ErfOp : Graph_UnaryOp<"erf", Graph_FloatTensor> { let summary = "ONNX Erf"; }
def Graph_SinOp : Graph_UnaryOp<"sin", Graph_FloatTensor> { let summary = "ONNX Sin"; }
def Graph_CosOp : Graph_UnaryOp<"cos", Graph_FloatTensor> { let summary = "ONNX Cos"; }
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", Graph_FloatTensor> {
  let summary = "ONNX Sigmoid";
}
def Graph_SoftplusOp : Graph_UnaryOp<"softplus", Graph_FloatTensor> {
  let summary = "ONNX Softplus: log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|))";
}
def Graph_NotOp : Graph_UnaryOp<"not", Graph_BoolTensor> { let summary = "ONNX Not"; }
def Graph_IdentityOp : Graph_UnaryOp<"identity", Graph_Tensor,
                                     [Graph_KernelRenamed, Graph_NoArithmetic]> {
  let summary = "ONNX Identity (and inference-mode Dropout)";
  let hasFolder = 1;
}

def Graph_GeluOp : Graph_Op<"gelu",
    [Graph_KernelAttributes, Pure, SameOperandsAndResultType, Graph_Differentiable]> {
  let summary = "ONNX Gelu (opset 20); approximate is \"none\" (erf) or \"tanh\"";
  let arguments = (ins Graph_FloatTensor:$input, StrAttr:$approximate);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

// Binary ops broadcast their operands NumPy-style; the result shape is the broadcast shape.
class Graph_BinaryOp<string mnemonic, list<Trait> traits = []> :
    Graph_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor, Graph_Differentiable])> {
  let arguments = (ins Graph_Tensor:$lhs, Graph_Tensor:$rhs);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_AddOp : Graph_BinaryOp<"add"> { let summary = "ONNX Add"; }
def Graph_SubOp : Graph_BinaryOp<"sub"> { let summary = "ONNX Sub"; }
def Graph_MulOp : Graph_BinaryOp<"mul"> { let summary = "ONNX Mul"; }
def Graph_DivOp : Graph_BinaryOp<"div"> { let summary = "ONNX Div (integer: truncating)"; }
def Graph_PowOp : Graph_BinaryOp<"pow"> {
  let summary = "ONNX Pow; the exponent may have another numeric type than the base";
}
def Graph_MaxOp : Graph_BinaryOp<"max"> { let summary = "ONNX Max (variadic form chained)"; }
def Graph_MinOp : Graph_BinaryOp<"min"> { let summary = "ONNX Min (variadic form chained)"; }
def Graph_EqualOp : Graph_BinaryOp<"equal"> { let summary = "ONNX Equal"; }
def Graph_LessOp : Graph_BinaryOp<"less"> { let summary = "ONNX Less"; }
def Graph_GreaterOp : Graph_BinaryOp<"greater"> { let summary = "ONNX Greater"; }
def Graph_AndOp : Graph_BinaryOp<"and"> { let summary = "ONNX And"; }
def Graph_OrOp : Graph_BinaryOp<"or"> { let summary = "ONNX Or"; }

// A chain of elementwise ops run as one kernel (passes/fusion/FuseElementwise.cpp): one read of
// its inputs and one write of its outputs instead of a read and a write per op. `ops` are the
// steps by the names of the graph ops they stand for (FusedSteps.h: neg ... softplus,
// round_bf16 / round_f16 for a cast to a 16-bit float, add ... min); `args` holds two slots per step (-1 for a unary
// step's second): slots 0..N-1 are the inputs, N+i step i's result. Output j is slot
// `results[j]`. Every value is computed in f32 as the op it replaces computes it.
def Graph_FusedElementwiseOp : Graph_Op<"fused_elementwise",
    [Graph_KernelAttributes, Graph_CostWith<["getFlops"]>, Pure]> {
  let summary = "Elementwise ops fused into one kernel";
  let arguments = (ins Variadic<RankedTensorOf<[F32, BF16, F16]>>:$inputs, StrArrayAttr:$ops,
                   DenseI64ArrayAttr:$args, DenseI64ArrayAttr:$results);
  let results = (outs Variadic<RankedTensorOf<[F32, BF16, F16]>>:$outputs);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// ONNX Mod. With `fmod` the remainder takes the dividend's sign (C's fmod, torch.fmod; the
// only form ONNX defines for floats); without, the divisor's (Python's %, integers only).
def Graph_ModOp : Graph_Op<"mod", [Graph_KernelAttributes, Pure, InferTypeOpAdaptor,
                                   Graph_Differentiable]> {
  let summary = "ONNX Mod";
  let arguments = (ins Graph_Tensor:$lhs, Graph_Tensor:$rhs, BoolAttr:$fmod);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_WhereOp : Graph_Op<"where", [Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "ONNX Where";
  let arguments = (ins Graph_BoolTensor:$condition, Graph_Tensor:$x, Graph_Tensor:$y);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = [{
    $condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_ClipOp : Graph_Op<"clip", [Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "ONNX Clip; absent bounds are materialised as the type's extremes";
  let arguments = (ins Graph_Tensor:$input, Graph_Tensor:$min, Graph_Tensor:$max);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = [{
    $input `,` $min `,` $max attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_CastOp : Graph_Op<"cast",
    [Graph_NoArithmetic, Graph_KernelAttributes, Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "ONNX Cast";
  let arguments = (ins Graph_Tensor:$input, TypeAttr:$to);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

//===-------------------------------------------------------------------------------------===//
// Linear algebra, normalisation, softmax
//===-------------------------------------------------------------------------------------===//

// A product's operands and result may each be f32, bf16 or f16 (shardc-half-storage); the
// product is computed in f32 and rounded to the result's type. The inferred result type is the
// lhs's; any of the three element types is compatible with it.
//
// trans_lhs / trans_rhs: the operand is stored with its last two dimensions swapped (it must
// have rank >= 2), so the product reads it transposed instead of a transpose writing a copy.
// shardc-fold-transposes sets them after every pass that reasons about products; the importer
// and autodiff never do.
def Graph_MatMulOp : Graph_Op<"matmul",
    [Graph_CostWith<["getFlops"]>, Graph_KernelAttributes, Pure,
     InferTypeOpAdaptorWithIsCompatible, Graph_Differentiable]> {
  let summary = "ONNX MatMul (numpy.matmul: 1-D promotion, broadcast batch dimensions)";
  let arguments = (ins Graph_StorageFloatTensor:$lhs, Graph_StorageFloatTensor:$rhs,
                   UnitAttr:$trans_lhs, UnitAttr:$trans_rhs);
  let results = (outs Graph_StorageFloatTensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    // The shapes numpy.matmul multiplies: the operands' with trans_lhs / trans_rhs undone.
    ::llvm::SmallVector<int64_t> logicalLhsShape();
    ::llvm::SmallVector<int64_t> logicalRhsShape();
    // K, the length of the contracted dimension.
    int64_t contractedSize();
  }];
}

def Graph_GemmOp : Graph_Op<"gemm",
    [Graph_CostWith<["getFlops"]>, Graph_KernelAttributes, Pure, InferTypeOpAdaptorWithIsCompatible,
     Graph_Differentiable]> {
  let summary = "ONNX Gemm: alpha * op(a) * op(b) + beta * c";
  let arguments = (ins Graph_StorageFloatTensor:$a, Graph_StorageFloatTensor:$b,
                   Optional<Graph_FloatTensor>:$c,
                   F32Attr:$alpha, F32Attr:$beta, BoolAttr:$trans_a, BoolAttr:$trans_b);
  let results = (outs Graph_StorageFloatTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// A product with a frozen weight stored in fewer bits (shardc-quantize-base, --base-dtype):
// W [rows, cols] is held as `codes` (and `scales`) in `format`, runtime/support/
// quantized_weights.h, and the kernel dequantizes it a block of rows at a time inside the
// product, never as a full-precision copy of the weight. y = x · Wᵀ (x [..., cols] -> y [...,
// rows]: nn.Linear's product), or y = x · W with `untransposed` (x [..., rows] -> y [..., cols]:
// the gradient of its input). The weight is frozen: it has no gradient.
def Graph_QuantizedMatMulOp : Graph_Op<"quantized_matmul",
    [Graph_CostWith<["getFlops"]>, Graph_KernelAttributes, Pure, InferTypeOpAdaptor,
     Graph_Differentiable]> {
  let summary = "x times a frozen weight dequantized inside the product (bf16, int8 or nf4)";
  let arguments = (ins Graph_FloatTensor:$input, RankedTensorOf<[BF16, I8, UI8]>:$codes,
                   Optional<Graph_FloatTensor>:$scales, StrAttr:$format,
                   ConfinedAttr<I64Attr, [IntPositive]>:$rows,
                   ConfinedAttr<I64Attr, [IntPositive]>:$cols, UnitAttr:$untransposed);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Graph_KernelAttributes, Pure, InferTypeOpAdaptor,
                                                 Graph_Differentiable]> {
  let summary = "ONNX LayerNormalization over dimensions [axis, rank)";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                   Optional<Graph_FloatTensor>:$bias,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$axis, F32Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$output, Graph_FloatTensor:$mean,
                  Graph_FloatTensor:$inv_std_dev);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class Graph_SoftmaxLikeOp<string mnemonic> :
    Graph_Op<mnemonic,
      [Graph_KernelAttributes, Pure, SameOperandsAndResultType, Graph_Differentiable]> {
  let arguments = (ins Graph_FloatTensor:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}
def Graph_SoftmaxOp : Graph_SoftmaxLikeOp<"softmax"> { let summary = "ONNX Softmax (opset 13)"; }
def Graph_LogSoftmaxOp : Graph_SoftmaxLikeOp<"log_softmax"> {
  let summary = "ONNX LogSoftmax (opset 13)";
}

def Graph_AttentionOp : Graph_Op<"attention",
    [Graph_CostWith<["getFlops"]>, Graph_KernelAttributes, Pure, Graph_Differentiable]> {
  let summary = "Fused scaled dot-product attention (made by shardc-fuse-attention)";
  let description = [{
    q [..., S, D], k [..., Sk, D], v [..., Sk, Dv] (the same leading dims), an optional f32
    mask broadcastable to [..., S, Sk] -> output [..., S, Dv] and lse [..., S]:
    s = scale * q k^T + mask (and -inf above the diagonal, bottom-right aligned, when causal),
    p = softmax over the keys, output = p v, lse = log(sum(exp(s))) per row (what the backward
    pass needs to recompute p without storing it). No [..., S, Sk] tensor is ever stored.
  }];
  let arguments = (ins Graph_FloatTensor:$q, Graph_FloatTensor:$k, Graph_FloatTensor:$v,
                   Optional<Graph_FloatTensor>:$mask, F32Attr:$scale, BoolAttr:$causal);
  let results = (outs Graph_FloatTensor:$output, Graph_FloatTensor:$lse);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===-------------------------------------------------------------------------------------===//
// Convolution and pooling: NC + spatial layout (1 to 3 spatial dims). `pads` holds the begins
// of every spatial dim, then the ends (ONNX's order); ONNX's auto_pad forms are resolved into
// explicit pads by the importer.
//===-------------------------------------------------------------------------------------===//

def Graph_ConvOp : Graph_Op<"conv",
    [Graph_CostWith<["getFlops"]>,
     Graph_KernelAttributes, Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "ONNX Conv without bias (the importer adds a bias as a broadcast add)";
  let description = [{
    input [N, C, *S], weight [M, C/group, *K] -> output [N, M, *O] with
    O = floor((S + pad_begin + pad_end - dilation * (K - 1) - 1) / stride) + 1.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$weight,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, ConfinedAttr<I64Attr, [IntPositive]>:$group);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
}

class Graph_PoolOp<string mnemonic, dag extraAttrs> :
    Graph_Op<mnemonic, [Graph_KernelAttributes, Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let arguments = !con((ins Graph_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                            DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                            BoolAttr:$ceil_mode), extraAttrs);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}
def Graph_MaxPoolOp : Graph_PoolOp<"max_pool", (ins DenseI64ArrayAttr:$dilations)> {
  let summary = "ONNX MaxPool (the Indices output is not supported); padding never wins";
}
def Graph_AvgPoolOp : Graph_PoolOp<"avg_pool", (ins BoolAttr:$count_include_pad)> {
  let summary = "ONNX AveragePool (PyTorch's divisor where a ceil_mode window passes the pads)";
}

//===-------------------------------------------------------------------------------------===//
// Reductions
//===-------------------------------------------------------------------------------------===//

// `axes` is sorted, non-negative and non-empty: the importer resolves ONNX's "empty axes"
// forms (reduce everything, or noop_with_empty_axes) before creating the op.
class Graph_ReduceOp<string mnemonic> :
    Graph_Op<mnemonic, [Graph_KernelAttributes, Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$axes, BoolAttr:$keepdims);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}
def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum"> { let summary = "ONNX ReduceSum"; }
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean"> { let summary = "ONNX ReduceMean"; }
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max"> { let summary = "ONNX ReduceMax"; }

// ONNX ArgMax: the index (i64) of the largest element along `axis` (non-negative); the first
// such index, or the last with `select_last_index`; a NaN counts as the largest (NumPy and
// PyTorch). An index has no gradient.
def Graph_ArgMaxOp : Graph_Op<"arg_max", [Graph_KernelAttributes, Pure, InferTypeOpAdaptor]> {
  let summary = "ONNX ArgMax";
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                       BoolAttr:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===-------------------------------------------------------------------------------------===//
// Shapes and data movement
//===-------------------------------------------------------------------------------------===//

// Reshape-like ops only reinterpret the element order; the result type says the new shape.
class Graph_ReshapeLikeOp<string mnemonic> : Graph_Op<mnemonic,
      [Graph_KernelRenamed, Graph_NoArithmetic, Pure, Graph_Differentiable]> {
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}
def Graph_ReshapeOp : Graph_ReshapeLikeOp<"reshape"> {
  let summary = "ONNX Reshape (the shape operand is folded into the result type)";
}
def Graph_FlattenOp : Graph_ReshapeLikeOp<"flatten"> { let summary = "ONNX Flatten"; }
def Graph_SqueezeOp : Graph_ReshapeLikeOp<"squeeze"> { let summary = "ONNX Squeeze"; }
def Graph_UnsqueezeOp : Graph_ReshapeLikeOp<"unsqueeze"> { let summary = "ONNX Unsqueeze"; }

def Graph_TransposeOp : Graph_Op<"transpose",
    [Graph_NoArithmetic, Graph_KernelAttributes, Pure, InferTypeOpAdaptor,
     Graph_Differentiable]> {
  let summary = "ONNX Transpose";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_ConcatOp : Graph_Op<"concat",
    [Graph_NoArithmetic, Graph_KernelAttributes, Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "ONNX Concat";
  let arguments = (ins Variadic<Graph_Tensor>:$inputs,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Graph_SplitOp : Graph_Op<"split",
    [Graph_NoArithmetic,
     Graph_KernelAttributes, Graph_ShardableWith<["localizeOp"]>, Pure, InferTypeOpAdaptor,
     Graph_Differentiable]> {
  let summary = "ONNX Split; `sizes` has one entry per result";
  let arguments = (ins Graph_Tensor:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                   DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Graph_Tensor>:$outputs);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

// Fully normalised slice: one (start, end, step) per dimension, with ONNX's clamping already
// applied, so element i of dimension d reads index starts[d] + i * steps[d].
def Graph_SliceOp : Graph_Op<"slice",
    [Graph_NoArithmetic,
     Graph_KernelAttributes, Graph_ShardableWith<["localizeOp"]>, Pure, InferTypeOpAdaptor,
     Graph_Differentiable]> {
  let summary = "ONNX Slice";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_PadOp : Graph_Op<"pad",
    [Graph_NoArithmetic, Graph_KernelAttributes, Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "ONNX Pad, constant mode";
  let description = [{
    `pads` holds the elements added before each dimension, then those added after each (ONNX's
    order, every dimension listed); a negative entry removes elements (a crop). New elements
    hold `value`, converted to the element type.
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$pads, F64Attr:$value);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_GatherOp : Graph_Op<"gather",
    [Graph_NoArithmetic, Graph_KernelAttributes, Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "ONNX Gather";
  let description = [{
    `padding_idx`, when present, is an embedding's padding row (PyTorch's
    nn.Embedding(padding_idx=...), recorded by the export helper: ONNX has no field for it).
    The lookup reads it like any other row; its gradient never reaches it from this lookup,
    as in PyTorch (a tied output projection still trains the row).
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                   OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Graph_CumSumOp : Graph_Op<"cum_sum", [Graph_KernelAttributes, Pure, SameOperandsAndResultType,
                                          Graph_Differentiable]> {
  let summary = "ONNX CumSum; the axis input is folded into an attribute";
  let arguments = (ins Graph_Tensor:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                   BoolAttr:$exclusive, BoolAttr:$reverse);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Graph_ScatterNDOp : Graph_Op<"scatter_nd",
    [Graph_KernelAttributes, Graph_ShardableWith<["localizeOp"]>, Pure, Graph_Differentiable]> {
  let summary = "ONNX ScatterND: data with updates written (or combined) where indices say";
  let description = [{
    indices [..., k] (k <= rank(data)) address slices data[i0, ..., ik-1, :, ...]; updates has
    the shape indices.shape[:-1] + data.shape[k:]. `reduction` is ONNX's: "none" writes,
    "add", "mul", "max", "min" combine the update with what is there. Negative indices count
    from the end; an index out of range is a run-time error. The result has data's type.
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices, Graph_Tensor:$updates,
                   StrAttr:$reduction);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ExpandOp : Graph_Op<"expand", [Graph_NoArithmetic, Pure, Graph_Differentiable]> {
  let summary = "ONNX Expand (the shape operand is folded into the result type)";
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_TriluOp : Graph_Op<"trilu",
    [Graph_NoArithmetic,
     Graph_KernelAttributes, Pure, SameOperandsAndResultType, Graph_Differentiable]> {
  let summary = "ONNX Trilu; k is folded into an attribute";
  let arguments = (ins Graph_Tensor:$input, BoolAttr:$upper, I64Attr:$k);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Graph_ShapeOp : Graph_Op<"shape",
    [Graph_NoArithmetic, Graph_NoKernel, Pure, InferTypeOpAdaptor]> {
  let summary = "ONNX Shape (opset 15 start/end normalised); always folds to a constant";
  let arguments = (ins Graph_Tensor:$input, I64Attr:$start, I64Attr:$end);
  let results = (outs RankedTensorOf<[I64]>:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_ConstantOfShapeOp : Graph_Op<"constant_of_shape",
    [Graph_NoArithmetic, Graph_NoKernel, Graph_ShardableWith<["localizeOp"]>, Pure]> {
  let summary = "ONNX ConstantOfShape; the shape is the (static) result type";
  let arguments = (ins Graph_Tensor:$shape, ElementsAttr:$value);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "$shape attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_RangeOp : Graph_Op<"range", [Graph_NoArithmetic, Graph_NoKernel, Pure]> {
  let summary = "ONNX Range; the element count is the (static) result type";
  let arguments = (ins Graph_Tensor:$start, Graph_Tensor:$limit, Graph_Tensor:$delta);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

// ONNX Dropout. Without `training` (inference, and every forward compilation) it is the
// identity with an all-true mask and folds away. With `training` it draws a keep-mask from
// Philox4x32-10 keyed on (seed, step, stream, element index) -- see the dropout kernel in
// docs/kernels.md -- so that any later split of the same step across ranks draws the same mask.
// `stream` tells the dropouts of one step apart (the node's position among the model's
// Dropout nodes). The training step wires `key` = (seed, step) once it exists; before that a
// training dropout has no key and cannot run.
def Graph_DropoutOp : Graph_Op<"dropout",
    [Graph_KernelAttributes, Graph_ShardableWith<["localizeOp"]>, Pure, Graph_Differentiable]> {
  let summary = "ONNX Dropout (inference: identity; training: Philox keep-mask, scaled)";
  let arguments = (ins Graph_Tensor:$input, Variadic<0DTensorOf<[I64]>>:$key, F32Attr:$ratio,
                   UnitAttr:$training, DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Graph_Tensor:$output, Graph_BoolTensor:$mask);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    // A training dropout whose mask is random (ratio > 0).
    bool isRandom() { return getTraining() && getRatio().convertToFloat() > 0.0f; }
  }];
}

//===-------------------------------------------------------------------------------------===//
// Losses
//===-------------------------------------------------------------------------------------===//

// `reduction` is "mean", "sum" or "none"; `ignore_index` is absent when ONNX's is.
def Graph_SoftmaxCrossEntropyLossOp : Graph_Op<"softmax_cross_entropy_loss",
    [Graph_KernelAttributes, Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "ONNX SoftmaxCrossEntropyLoss";
  let arguments = (ins Graph_FloatTensor:$scores, Graph_IndexTensor:$labels,
                   Optional<Graph_FloatTensor>:$weights, StrAttr:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$loss, Graph_FloatTensor:$log_prob);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Graph_NegativeLogLikelihoodLossOp : Graph_Op<"nll_loss",
    [Graph_KernelAttributes, Pure, InferTypeOpAdaptor,
     Graph_Differentiable]> {
  let summary = "ONNX NegativeLogLikelihoodLoss";
  let arguments = (ins Graph_FloatTensor:$input, Graph_IndexTensor:$target,
                   Optional<Graph_FloatTensor>:$weight, StrAttr:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$loss);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

include "shardc/Dialect/Graph/GraphTrainingOps.td"
include "shardc/Dialect/Graph/GraphCollectiveOps.td"

#endif // SHARDC_DIALECT_GRAPH_GRAPHOPS_TD
