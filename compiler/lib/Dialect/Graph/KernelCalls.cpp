//===- KernelCalls.cpp - the kernel calls of ops with attributes ------------------------===//
//
// KernelOpInterface's methods for the ops that do more than run the kernel of their own name on
// their operands and results in order (docs/kernels.md gives each kernel's attributes and
// operands). Every other op uses the interface's defaults.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

namespace {

// The kernels' loss attributes: reduction, and ignore_index with whether there is one.
template <typename LossOp> void setLossAttrs(LossOp op, KernelCallBuilder &call) {
  call.setString("reduction", op.getReduction());
  call.setInt("has_ignore_index", op.getIgnoreIndex().has_value() ? 1 : 0);
  call.setInt("ignore_index", static_cast<int64_t>(op.getIgnoreIndex().value_or(0)));
}

// A loss with an optional weight operand: absent, it is an absent input.
template <typename LossOp>
LogicalResult lossCall(LossOp op, Value weight, KernelCallBuilder &call) {
  if (!weight)
    call.addAbsentInput();
  setLossAttrs(op, call);
  return success();
}

template <typename ConvLikeOp> LogicalResult convCall(ConvLikeOp op, KernelCallBuilder &call) {
  call.setInts("strides", op.getStrides());
  call.setInts("pads", op.getPads());
  call.setInts("dilations", op.getDilations());
  call.setInt("group", static_cast<int64_t>(op.getGroup()));
  return success();
}

// ceil_mode only sized the output; the kernels read the extents from it.
template <typename MaxPoolLikeOp>
LogicalResult maxPoolCall(MaxPoolLikeOp op, KernelCallBuilder &call) {
  call.setInts("kernel_shape", op.getKernelShape());
  call.setInts("strides", op.getStrides());
  call.setInts("pads", op.getPads());
  call.setInts("dilations", op.getDilations());
  return success();
}

template <typename AvgPoolLikeOp>
LogicalResult avgPoolCall(AvgPoolLikeOp op, KernelCallBuilder &call) {
  call.setInts("kernel_shape", op.getKernelShape());
  call.setInts("strides", op.getStrides());
  call.setInts("pads", op.getPads());
  call.setInt("count_include_pad", op.getCountIncludePad() ? 1 : 0);
  return success();
}

template <typename ReduceLikeOp>
LogicalResult reduceCall(ReduceLikeOp op, KernelCallBuilder &call) {
  call.setInts("axes", op.getAxes());
  call.setInt("keepdims", op.getKeepdims());
  return success();
}

// Ops whose only attribute is `axis`.
template <typename AxisOp> LogicalResult axisCall(AxisOp op, KernelCallBuilder &call) {
  call.setInt("axis", static_cast<int64_t>(op.getAxis()));
  return success();
}

// Collectives (GraphCollectiveOps.td; runtime/comm): the rank count travels with the call so
// the runtime checks it against its communicator and sizes the workspace; on a mesh of several
// axes, a collective over one axis names its group.
template <typename CollectiveOp>
LogicalResult collectiveCall(CollectiveOp op, KernelCallBuilder &call) {
  if (failed(call.setCollectiveGroup(op.getMeshAttr(),
                                     op.getMeshAxes().value_or(llvm::ArrayRef<int16_t>()))))
    return failure();
  if (op.getBucket())
    call.setInt("bucket", static_cast<int64_t>(*op.getBucket()));
  if (op.getUnit())
    call.setString("unit", *op.getUnit());
  return success();
}

} // namespace

//===- Elementwise and casts ---------------------------------------------------------===//

LogicalResult GeluOp::buildKernelCall(KernelCallBuilder &call) {
  call.setString("approximate", getApproximate());
  return success();
}

LogicalResult ModOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInt("fmod", getFmod());
  return success();
}

LogicalResult CastOp::buildKernelCall(KernelCallBuilder &call) {
  call.setDType("to", getTo());
  return success();
}

//===- Products, normalisation, attention --------------------------------------------===//

LogicalResult MatMulOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInt("trans_lhs", getTransLhs() ? 1 : 0);
  call.setInt("trans_rhs", getTransRhs() ? 1 : 0);
  return success();
}

LogicalResult GemmOp::buildKernelCall(KernelCallBuilder &call) {
  if (!getC())
    call.addAbsentInput();
  call.setFloat("alpha", getAlpha().convertToFloat());
  call.setFloat("beta", getBeta().convertToFloat());
  call.setInt("trans_a", getTransA());
  call.setInt("trans_b", getTransB());
  return success();
}

LogicalResult LayerNormOp::buildKernelCall(KernelCallBuilder &call) {
  if (!getBias())
    call.addAbsentInput();
  call.setInt("axis", static_cast<int64_t>(getAxis()));
  call.setFloat("epsilon", getEpsilon().convertToFloat());
  return success();
}

// The kernel's operands are positional: an absent mask is an absent input.
LogicalResult AttentionOp::buildKernelCall(KernelCallBuilder &call) {
  call.setOperands({getQ(), getK(), getV(), getMask()}, {getOutput(), getLse()});
  call.setFloat("scale", getScale().convertToFloat());
  call.setInt("causal", getCausal() ? 1 : 0);
  return success();
}

LogicalResult QuantizedMatMulOp::buildKernelCall(KernelCallBuilder &call) {
  call.setOperands({getInput(), getCodes(), getScales()}, {getOutput()});
  call.setString("format", getFormat());
  call.setInt("rows", getRows());
  call.setInt("cols", getCols());
  call.setInt("untransposed", getUntransposed() ? 1 : 0);
  return success();
}

LogicalResult AttentionGradOp::buildKernelCall(KernelCallBuilder &call) {
  call.setOperands({getQ(), getK(), getV(), getMask(), getOutput(), getLse(), getDout()},
                   {getDq(), getDk(), getDv()});
  call.setFloat("scale", getScale().convertToFloat());
  call.setInt("causal", getCausal() ? 1 : 0);
  return success();
}

LogicalResult SoftmaxOp::buildKernelCall(KernelCallBuilder &call) { return axisCall(*this, call); }
LogicalResult LogSoftmaxOp::buildKernelCall(KernelCallBuilder &call) {
  return axisCall(*this, call);
}

//===- Reductions ----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::buildKernelCall(KernelCallBuilder &call) {
  return reduceCall(*this, call);
}
LogicalResult ReduceMeanOp::buildKernelCall(KernelCallBuilder &call) {
  return reduceCall(*this, call);
}
LogicalResult ReduceMaxOp::buildKernelCall(KernelCallBuilder &call) {
  return reduceCall(*this, call);
}
LogicalResult ArgMaxOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInt("axis", static_cast<int64_t>(getAxis()));
  call.setInt("keepdims", getKeepdims());
  call.setInt("select_last_index", getSelectLastIndex());
  return success();
}

//===- Data movement -------------------------------------------------------------------===//

// Element order is unchanged by these; the runtime copies the bytes.
StringRef IdentityOp::getKernelName() { return "copy"; }
StringRef ReshapeOp::getKernelName() { return "copy"; }
StringRef FlattenOp::getKernelName() { return "copy"; }
StringRef SqueezeOp::getKernelName() { return "copy"; }
StringRef UnsqueezeOp::getKernelName() { return "copy"; }

LogicalResult TransposeOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInts("perm", getPerm());
  return success();
}

LogicalResult ConcatOp::buildKernelCall(KernelCallBuilder &call) { return axisCall(*this, call); }

LogicalResult SplitOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInt("axis", static_cast<int64_t>(getAxis()));
  call.setInts("sizes", getSizes());
  return success();
}

LogicalResult SliceOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInts("starts", getStarts());
  call.setInts("steps", getSteps());
  return success();
}

LogicalResult PadOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInts("pads", getPads());
  call.setDouble("value", getValue().convertToDouble());
  return success();
}

LogicalResult GatherOp::buildKernelCall(KernelCallBuilder &call) { return axisCall(*this, call); }

LogicalResult TriluOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInt("upper", getUpper());
  call.setInt("k", static_cast<int64_t>(getK()));
  return success();
}

LogicalResult CumSumOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInt("axis", static_cast<int64_t>(getAxis()));
  call.setInt("exclusive", getExclusive() ? 1 : 0);
  call.setInt("reverse", getReverse() ? 1 : 0);
  return success();
}

LogicalResult ScatterNDOp::buildKernelCall(KernelCallBuilder &call) {
  call.setString("reduction", getReduction());
  return success();
}

//===- Convolution and pooling ---------------------------------------------------------===//

LogicalResult ConvOp::buildKernelCall(KernelCallBuilder &call) { return convCall(*this, call); }
LogicalResult ConvGradInputOp::buildKernelCall(KernelCallBuilder &call) {
  return convCall(*this, call);
}
LogicalResult ConvGradWeightOp::buildKernelCall(KernelCallBuilder &call) {
  return convCall(*this, call);
}
LogicalResult MaxPoolOp::buildKernelCall(KernelCallBuilder &call) {
  return maxPoolCall(*this, call);
}
LogicalResult MaxPoolGradOp::buildKernelCall(KernelCallBuilder &call) {
  return maxPoolCall(*this, call);
}
LogicalResult AvgPoolOp::buildKernelCall(KernelCallBuilder &call) {
  return avgPoolCall(*this, call);
}
LogicalResult AvgPoolGradOp::buildKernelCall(KernelCallBuilder &call) {
  return avgPoolCall(*this, call);
}

//===- Losses --------------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyLossOp::buildKernelCall(KernelCallBuilder &call) {
  return lossCall(*this, getWeights(), call);
}
LogicalResult NegativeLogLikelihoodLossOp::buildKernelCall(KernelCallBuilder &call) {
  return lossCall(*this, getWeight(), call);
}

//===- Dropout -------------------------------------------------------------------------===//

LogicalResult DropoutOp::buildKernelCall(KernelCallBuilder &call) {
  if (!isRandom())
    return failure(); // the identity: folded before lowering
  call.setFloat("ratio", getRatio().convertToFloat());
  call.setInt("stream", getStream());
  // A device's block of a split tensor (passes/sharding/Partition): the whole shape, the dim
  // split along the batch and the one split on another mesh axis; each rank's offsets are set
  // by the runtime (runtime/loader/rank_program.h, from its first batch row and its mesh
  // coordinate).
  Operation *op = getOperation();
  if (auto global = op->getAttrOfType<DenseI64ArrayAttr>(kDropoutGlobalShapeAttr))
    call.setInts("global_shape", global.asArrayRef());
  if (auto dim = op->getAttrOfType<IntegerAttr>(kDropoutSplitDimAttr)) {
    auto unit = op->getAttrOfType<IntegerAttr>(kDropoutSplitUnitAttr);
    if (!unit)
      return failure();
    // A microbatch's block starts split_first further (passes/microbatch/MicroBatches).
    auto first = op->getAttrOfType<IntegerAttr>(kDropoutSplitFirstAttr);
    int64_t firstValue = first ? first.getInt() : 0;
    call.setInt("split_dim", dim.getInt());
    call.setInt("split_unit", unit.getInt());
    if (first)
      call.setInt("split_first", firstValue);
    call.setInt("split_offset", firstValue);
  }
  if (auto block = op->getAttrOfType<DenseI64ArrayAttr>(kDropoutBlockAttr)) {
    if (block.size() != 3)
      return failure();
    call.setInt("block_dim", block[0]);
    call.setInt("block_axis", block[1]);
    call.setInt("block_size", block[2]);
    call.setInt("block_offset", 0);
  }
  return success();
}

//===- Backward ops --------------------------------------------------------------------===//

LogicalResult LayerNormGradOp::buildKernelCall(KernelCallBuilder &call) {
  return axisCall(*this, call);
}
LogicalResult SoftmaxGradOp::buildKernelCall(KernelCallBuilder &call) {
  return axisCall(*this, call);
}
LogicalResult LogSoftmaxGradOp::buildKernelCall(KernelCallBuilder &call) {
  return axisCall(*this, call);
}

LogicalResult GeluGradOp::buildKernelCall(KernelCallBuilder &call) {
  call.setString("approximate", getApproximate());
  return success();
}

LogicalResult SoftmaxCrossEntropyLossGradOp::buildKernelCall(KernelCallBuilder &call) {
  return lossCall(*this, getWeights(), call);
}
LogicalResult NegativeLogLikelihoodLossGradOp::buildKernelCall(KernelCallBuilder &call) {
  return lossCall(*this, getWeight(), call);
}

LogicalResult GatherGradOp::buildKernelCall(KernelCallBuilder &call) {
  return axisCall(*this, call);
}

LogicalResult ReduceMaxGradOp::buildKernelCall(KernelCallBuilder &call) {
  return reduceCall(*this, call);
}

// The gradient of a slice pads dy back to the input's shape.
StringRef SliceGradOp::getKernelName() { return "pad_for_slice"; }
LogicalResult SliceGradOp::buildKernelCall(KernelCallBuilder &call) {
  call.setInts("starts", getStarts());
  call.setInts("steps", getSteps());
  return success();
}

//===- Optimizer updates ---------------------------------------------------------------===//

LogicalResult AdamWUpdateOp::buildKernelCall(KernelCallBuilder &call) {
  call.setDouble("beta1", getBeta1().convertToDouble());
  call.setDouble("beta2", getBeta2().convertToDouble());
  call.setDouble("eps", getEps().convertToDouble());
  call.setDouble("weight_decay", getWeightDecay().convertToDouble());
  return success();
}

LogicalResult SGDUpdateOp::buildKernelCall(KernelCallBuilder &call) {
  call.setDouble("momentum", getMomentum().convertToDouble());
  call.setDouble("dampening", getDampening().convertToDouble());
  call.setDouble("weight_decay", getWeightDecay().convertToDouble());
  call.setInt("nesterov", getNesterov());
  return success();
}

LogicalResult ScaleByClipOp::buildKernelCall(KernelCallBuilder &call) {
  call.setFloat("max_norm", getMaxNorm().convertToFloat());
  return success();
}

//===- Collectives ---------------------------------------------------------------------===//

LogicalResult AllReduceOp::buildKernelCall(KernelCallBuilder &call) {
  return collectiveCall(*this, call);
}
LogicalResult ReduceScatterOp::buildKernelCall(KernelCallBuilder &call) {
  return collectiveCall(*this, call);
}
LogicalResult AllGatherOp::buildKernelCall(KernelCallBuilder &call) {
  return collectiveCall(*this, call);
}
LogicalResult AllToAllOp::buildKernelCall(KernelCallBuilder &call) {
  return collectiveCall(*this, call);
}
LogicalResult ShardSliceOp::buildKernelCall(KernelCallBuilder &call) {
  return collectiveCall(*this, call);
}
// The peers are ranks of the op's group (its mesh axes), as the kernel's communicator numbers
// them.
LogicalResult SendRecvOp::buildKernelCall(KernelCallBuilder &call) {
  if (failed(call.setCollectiveGroup(getMeshAttr(),
                                     getMeshAxes().value_or(llvm::ArrayRef<int16_t>()))))
    return failure();
  if (getSendTo())
    call.setInt("to", *getSendTo());
  if (getRecvFrom())
    call.setInt("from", *getRecvFrom());
  if (getPosted())
    call.setInt("posted", 1);
  return success();
}

} // namespace shardc::graph
