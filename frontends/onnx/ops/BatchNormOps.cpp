//===- BatchNormOps.cpp - BatchNormalization and InstanceNormalization, decomposed ------===//
//
// BatchNormalization becomes reductions and elementwise ops, so its gradient and its sharding
// come from theirs: in training mode the batch statistics are a ReduceMean over every dim but
// the channels, and a data-parallel split of the batch makes them a pending mean that the
// partitioner all-reduces: the statistics of the whole global batch (SyncBatchNorm's), as the
// ONNX graph says, never a rank's own.
//
// Training mode also produces the new running statistics. When they are parameters of the
// model (PyTorch's buffers), they become graph.buffer results: the step writes them back, so
// checkpoints and exports carry them, and they are never trained. ONNX's reference updates
// the running variance with the biased batch variance; PyTorch, whose exporter writes the
// node unchanged, with the unbiased one (n / (n - 1)). shardc follows the exporter's
// framework for models produced by PyTorch and ONNX's definition otherwise.
//
// InstanceNormalization (how PyTorch exports GroupNorm: a reshape to [N, groups, ...], an
// InstanceNormalization with unit scale and zero bias, a reshape back and the affine
// parameters as Mul and Add) is the same decomposition with the statistics of each sample and
// channel, the mean over the spatial dims: rows never meet, so the batch splits freely.
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/GraphBuilder.h"
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/ops/OpImporters.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

struct BatchNormBuilder {
  NodeContext &node;
  RankedTensorType x;

  Value scalar(double v) { return node.scalarF32(static_cast<float>(v)); }
  template <typename OpT> FailureOr<Value> binary(FailureOr<Value> a, FailureOr<Value> b) {
    if (failed(a) || failed(b))
      return failure();
    return node.createInferred1<OpT>(*a, *b);
  }
  template <typename OpT> FailureOr<Value> unary(FailureOr<Value> a) {
    if (failed(a))
      return failure();
    return node.createTyped1<OpT>(a->getType(), *a);
  }
  // A per-channel [C] tensor as [1, C, 1, ...], broadcasting over x.
  FailureOr<Value> perChannel(FailureOr<Value> v) {
    if (failed(v))
      return failure();
    SmallVector<int64_t> shape(x.getRank(), 1);
    shape[1] = x.getDimSize(1);
    return node.createTyped1<ReshapeOp>(RankedTensorType::get(shape, x.getElementType()), *v);
  }
  // [1, C, 1, ...] back to [C].
  FailureOr<Value> channels(FailureOr<Value> v) {
    if (failed(v))
      return failure();
    return node.createTyped1<ReshapeOp>(
        RankedTensorType::get({x.getDimSize(1)}, x.getElementType()), *v);
  }
  // The mean over every dim but the channels, kept as [1, C, 1, ...].
  FailureOr<Value> channelMean(FailureOr<Value> v) { return meanOver(v, /*batch=*/true); }
  // The mean over the spatial dims, per sample and channel, kept as [N, C, 1, ...].
  FailureOr<Value> spatialMean(FailureOr<Value> v) { return meanOver(v, /*batch=*/false); }
  // The mean over dims 2.. (and over dim 0 with `batch`), dims kept.
  FailureOr<Value> meanOver(FailureOr<Value> v, bool batch) {
    if (failed(v))
      return failure();
    SmallVector<int64_t> axes;
    if (batch)
      axes.push_back(0);
    for (int64_t d = 2; d < x.getRank(); ++d)
      axes.push_back(d);
    OpBuilder &b = node.builder();
    return node.createInferred1<ReduceMeanOp>(*v, b.getDenseI64ArrayAttr(axes),
                                              b.getBoolAttr(true));
  }
  // (v - mean) / sqrt(variance + epsilon) * scale + bias, the scale and bias per channel.
  FailureOr<Value> normalise(FailureOr<Value> centred, FailureOr<Value> variance,
                             float epsilon, Value scale, Value bias) {
    FailureOr<Value> invStd = binary<DivOp>(
        this->scalar(1.0), unary<SqrtOp>(binary<AddOp>(variance, this->scalar(epsilon))));
    return binary<AddOp>(binary<MulOp>(binary<MulOp>(centred, invStd), perChannel(scale)),
                         perChannel(bias));
  }
};

// scale and bias (and the running statistics) must be [C], one per channel of X.
LogicalResult checkPerChannel(NodeContext &node, int64_t channels,
                              std::initializer_list<std::pair<Value, const char *>> operands) {
  for (auto [value, name] : operands) {
    ArrayRef<int64_t> shape = NodeContext::typeOf(value).getShape();
    if (shape.size() != 1 || shape[0] != channels)
      return node.fail(std::string(name) + " " + formatShape(shape) + " must be [" +
                       std::to_string(channels) + "] (one per channel of X)");
  }
  return success();
}

} // namespace

LogicalResult importBatchNormalization(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  FailureOr<Value> scale = node.requiredInput(1, "scale");
  FailureOr<Value> bias = node.requiredInput(2, "B");
  FailureOr<Value> runningMean = node.requiredInput(3, "input_mean");
  FailureOr<Value> runningVar = node.requiredInput(4, "input_var");
  FailureOr<float> epsilon = node.floatAttr("epsilon", 1e-5f);
  FailureOr<float> momentum = node.floatAttr("momentum", 0.9f);
  if (failed(x) || failed(scale) || failed(bias) || failed(runningMean) || failed(runningVar) ||
      failed(epsilon) || failed(momentum))
    return failure();
  // Opset 14 made training an attribute; before it, the extra outputs asked for it.
  bool training = false;
  if (node.opset() >= 14) {
    FailureOr<int64_t> mode = node.intAttr("training_mode", 0);
    if (failed(mode))
      return failure();
    training = *mode != 0;
  } else {
    training = node.numOutputs() > 1;
  }
  if (node.hasOutput(3) || node.hasOutput(4))
    return node.fail("the saved_mean and saved_var outputs are not supported");
  if (!training && (node.hasOutput(1) || node.hasOutput(2)))
    return node.fail("running_mean and running_var are outputs only in training mode");
  RankedTensorType xType = NodeContext::typeOf(*x);
  if (xType.getRank() < 2)
    return node.fail("input X must be [N, C, ...], got " + formatShape(xType.getShape()));
  const int64_t channels = xType.getDimSize(1);
  if (failed(checkPerChannel(node, channels,
                             {{*scale, "scale"},
                              {*bias, "B"},
                              {*runningMean, "input_mean"},
                              {*runningVar, "input_var"}})))
    return failure();

  BatchNormBuilder b{node, xType};
  GraphBuilder &graph = node.graph();
  std::string nodeName = node.proto().name().empty() ? "BatchNormalization" : node.proto().name();
  FailureOr<Value> mean = training ? b.channelMean(*x) : b.perChannel(*runningMean);
  FailureOr<Value> centred = b.binary<SubOp>(*x, mean);
  FailureOr<Value> variance = training ? b.channelMean(b.binary<MulOp>(centred, centred))
                                       : b.perChannel(*runningVar);
  FailureOr<Value> y = b.normalise(centred, variance, *epsilon, *scale, *bias);
  if (failed(y))
    return failure();

  if (!training) {
    for (Value stat : {*runningMean, *runningVar})
      if (BlockArgument param = graph.parameterOf(stat))
        graph.markNotTrainable(param, "running statistic of BatchNormalization '" + nodeName +
                                          "' (exported in inference mode: used as is)");
    return node.setOutputs({*y});
  }

  // running = running * momentum + batch statistic * (1 - momentum).
  const int64_t count = xType.getNumElements() / std::max<int64_t>(channels, 1);
  if (count <= 1)
    return node.fail("training mode needs more than 1 value per channel, X is " +
                     formatShape(xType.getShape()));
  const bool unbiased = graph.producerName() == "pytorch";
  const double keep = *momentum, take = 1.0 - static_cast<double>(*momentum);
  FailureOr<Value> batchVar = b.channels(variance);
  if (unbiased)
    batchVar = b.binary<MulOp>(batchVar, b.scalar(static_cast<double>(count) / (count - 1)));
  FailureOr<Value> newMean = b.binary<AddOp>(b.binary<MulOp>(*runningMean, b.scalar(keep)),
                                             b.binary<MulOp>(b.channels(mean), b.scalar(take)));
  FailureOr<Value> newVar = b.binary<AddOp>(b.binary<MulOp>(*runningVar, b.scalar(keep)),
                                            b.binary<MulOp>(batchVar, b.scalar(take)));
  if (failed(newMean) || failed(newVar))
    return failure();
  using Update = std::pair<Value, Value>;
  for (auto [stat, updated] :
       std::initializer_list<Update>{{*runningMean, *newMean}, {*runningVar, *newVar}})
    if (BlockArgument param = graph.parameterOf(stat))
      if (failed(graph.addBufferUpdate(param, updated,
                                       "running statistic of BatchNormalization '" + nodeName +
                                           "' (updated by each step)")))
        return node.fail("running statistic '" +
                         func::FuncOp(param.getOwner()->getParentOp())
                             .getArgAttrOfType<StringAttr>(param.getArgNumber(), kParamAttr)
                             .str() +
                         "' is updated by another BatchNormalization node too");
  return node.setOutputs({*y, *newMean, *newVar});
}

LogicalResult importInstanceNormalization(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  FailureOr<Value> scale = node.requiredInput(1, "scale");
  FailureOr<Value> bias = node.requiredInput(2, "B");
  FailureOr<float> epsilon = node.floatAttr("epsilon", 1e-5f);
  if (failed(x) || failed(scale) || failed(bias) || failed(epsilon))
    return failure();
  RankedTensorType xType = NodeContext::typeOf(*x);
  if (xType.getRank() < 3)
    return node.fail("input must be [N, C, D1, ...], got " + formatShape(xType.getShape()));
  if (failed(checkPerChannel(node, xType.getDimSize(1), {{*scale, "scale"}, {*bias, "B"}})))
    return failure();
  BatchNormBuilder b{node, xType};
  FailureOr<Value> centred = b.binary<SubOp>(*x, b.spatialMean(*x));
  FailureOr<Value> variance = b.spatialMean(b.binary<MulOp>(centred, centred));
  FailureOr<Value> y = b.normalise(centred, variance, *epsilon, *scale, *bias);
  if (failed(y))
    return failure();
  return node.setOutputs({*y});
}

} // namespace shardc::onnx_import
