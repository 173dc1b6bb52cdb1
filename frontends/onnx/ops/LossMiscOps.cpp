//===- LossMiscOps.cpp - SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss, Dropout, ----===//
//                      Identity, Constant
#include "frontends/onnx/ops/OpImporters.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/TensorDecoding.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/ConstantEvaluator.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

struct LossAttributes {
  StringAttr reduction;
  IntegerAttr ignoreIndex; // null when ONNX's is absent
};

// reduction (default "mean", checked by the dialect) and the optional ignore_index.
FailureOr<LossAttributes> lossAttributes(NodeContext &node) {
  FailureOr<std::string> reduction = node.stringAttr("reduction", "mean");
  FailureOr<std::optional<int64_t>> ignoreIndex = node.optionalIntAttr("ignore_index");
  if (failed(reduction) || failed(ignoreIndex))
    return failure();
  OpBuilder &builder = node.builder();
  LossAttributes attrs{builder.getStringAttr(*reduction), IntegerAttr()};
  if (*ignoreIndex)
    attrs.ignoreIndex = builder.getI64IntegerAttr(**ignoreIndex);
  return attrs;
}

// Constant value for one of the forms value_float(s) / value_int(s).
DenseElementsAttr listConstant(MLIRContext *ctx, const onnx::AttributeProto &attr) {
  const std::string &name = attr.name();
  if (name == "value_float")
    return DenseElementsAttr::get(RankedTensorType::get({}, Float32Type::get(ctx)), attr.f());
  if (name == "value_int")
    return DenseElementsAttr::get(RankedTensorType::get({}, IntegerType::get(ctx, 64)),
                                  static_cast<int64_t>(attr.i()));
  if (name == "value_floats") {
    SmallVector<float> values(attr.floats().begin(), attr.floats().end());
    auto type = RankedTensorType::get({attr.floats_size()}, Float32Type::get(ctx));
    return DenseElementsAttr::get(type, ArrayRef<float>(values));
  }
  SmallVector<int64_t> values(attr.ints().begin(), attr.ints().end());
  auto type = RankedTensorType::get({attr.ints_size()}, IntegerType::get(ctx, 64));
  return DenseElementsAttr::get(type, ArrayRef<int64_t>(values));
}

} // namespace

LogicalResult importSoftmaxCrossEntropyLoss(NodeContext &node) {
  FailureOr<Value> scores = node.requiredInput(0, "scores");
  FailureOr<Value> labels = node.requiredInput(1, "labels");
  FailureOr<LossAttributes> attrs = lossAttributes(node);
  if (failed(scores) || failed(labels) || failed(attrs))
    return failure();
  // graph op results: loss and log_prob; the node binds log_prob only if it names it.
  auto results = node.createInferred<SoftmaxCrossEntropyLossOp>(
      2, *scores, *labels, node.input(2), attrs->reduction, attrs->ignoreIndex);
  if (failed(results))
    return failure();
  return node.setOutputs(*results);
}

LogicalResult importNegativeLogLikelihoodLoss(NodeContext &node) {
  FailureOr<Value> input = node.requiredInput(0, "input");
  FailureOr<Value> target = node.requiredInput(1, "target");
  FailureOr<LossAttributes> attrs = lossAttributes(node);
  if (failed(input) || failed(target) || failed(attrs))
    return failure();
  return node.setOutput(node.createInferred1<NegativeLogLikelihoodLossOp>(
      *input, *target, node.input(2), attrs->reduction, attrs->ignoreIndex));
}

// Dropout becomes graph.dropout with the constant ratio (ONNX default 0.5). It is a training
// dropout (random keep-mask, see GraphOps.td) only when the importer compiles a training step
// and the node's training_mode is true; otherwise it has inference semantics and folds to the
// identity. The node's `seed` attribute is ignored: masks come from the run's seed (shardrun
// --seed), the step and the node's stream, which keeps them reproducible across resumes and
// shardings.
LogicalResult importDropout(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  if (failed(x))
    return failure();
  int64_t stream = node.graph().nextDropoutStream();
  float ratio = 0.5f;
  if (node.hasInput(1)) {
    FailureOr<DenseElementsAttr> given = node.constantInput(1, "ratio");
    if (failed(given))
      return failure();
    if (!given->getElementType().isF32() || given->getNumElements() != 1)
      return node.fail("ratio must be an f32 scalar");
    ratio = given->getValues<float>()[0];
  }
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return node.fail("ratio must be in [0, 1), got " + std::to_string(ratio));
  bool trainingMode = false;
  if (node.hasInput(2)) {
    FailureOr<DenseElementsAttr> given = node.constantInput(2, "training_mode");
    if (failed(given))
      return failure();
    if (!given->getElementType().isInteger(1) || given->getNumElements() != 1)
      return node.fail("training_mode must be a bool scalar");
    trainingMode = given->getValues<bool>()[0];
  }
  bool training = trainingMode && node.graph().trainingDropout();
  RankedTensorType type = NodeContext::typeOf(*x);
  if (training && !type.getElementType().isF32())
    return node.fail("training-mode dropout needs f32 data");
  Type mask = RankedTensorType::get(type.getShape(), IntegerType::get(node.context(), 1));
  OpBuilder &b = node.builder();
  auto results = node.createTyped<DropoutOp>(
      TypeRange{type, mask}, *x, ValueRange{}, b.getF32FloatAttr(ratio),
      training ? b.getUnitAttr() : UnitAttr(), b.getI64IntegerAttr(stream));
  if (failed(results))
    return failure();
  return node.setOutputs(*results);
}

LogicalResult importIdentity(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  if (failed(x))
    return failure();
  return node.setOutput(node.createTyped1<IdentityOp>(x->getType(), *x));
}

// Exactly one of value, value_float(s), value_int(s); strings and sparse tensors are not
// supported.
LogicalResult importConstant(NodeContext &node) {
  const onnx::AttributeProto *form = nullptr;
  for (const onnx::AttributeProto &attr : node.proto().attribute()) {
    if (form)
      return node.fail("must have exactly one attribute, got '" + form->name() + "' and '" +
                       attr.name() + "'");
    form = &attr;
  }
  if (!form)
    return node.fail("has no value attribute");
  llvm::StringRef name = form->name();
  DenseElementsAttr value;
  if (name == "value") {
    if (!form->has_t())
      return node.fail("attribute 'value' must be a tensor");
    DecodedTensor decoded;
    std::string why;
    // External data was inlined when the model was loaded (inlineConstantNodeData).
    if (failed(decodeTensor(*node.context(), form->t(), "", decoded, why)))
      return node.fail("value: " + why);
    if (!decoded.present)
      return node.fail("value refers to external data that was not loaded");
    value = toElementsAttr(decoded);
  } else if (name == "value_float" || name == "value_int" || name == "value_floats" ||
             name == "value_ints") {
    value = listConstant(node.context(), *form);
  } else {
    return node.fail("attribute " + quote(name) +
                     " is not supported (value, value_float, "
                     "value_floats, value_int and value_ints are)");
  }
  return node.setOutput(node.constant(value));
}

// OneHot, composed of graph ops: where(unsqueeze(indices) == range(depth), on, off), the
// range laid along `axis` of the output and a negative index taken from the end (ONNX's
// wrap-around); an index outside [-depth, depth) matches nothing, giving all `off`. depth and
// values are compile-time constants; values [off, on] give the output's element type.
LogicalResult importOneHot(NodeContext &node) {
  FailureOr<Value> indices = node.requiredInput(0, "indices");
  FailureOr<DenseElementsAttr> depthValue = node.constantInput(1, "depth");
  FailureOr<DenseElementsAttr> values = node.constantInput(2, "values");
  FailureOr<int64_t> axisAttr = node.intAttr("axis", -1);
  if (failed(indices) || failed(depthValue) || failed(values) || failed(axisAttr))
    return failure();
  if (depthValue->getNumElements() != 1)
    return node.fail("input 'depth' must hold one value");
  Type depthElement = depthValue->getElementType();
  int64_t depth = depthElement.isF32()
                      ? static_cast<int64_t>(*depthValue->getValues<float>().begin())
                      : depthValue->getValues<APInt>()[0].getSExtValue();
  if (depth < 1)
    return node.fail("depth " + std::to_string(depth) + " is not a positive size");
  // The positions 0..depth-1 are a constant of the program.
  if (depth > kMaxFoldedConstantBytes / static_cast<int64_t>(sizeof(int64_t)))
    return node.fail("depth " + std::to_string(depth) + " is larger than shardc lays out at " +
                     "compile time (" + std::to_string(kMaxFoldedConstantBytes >> 20) + " MiB)");
  if (values->getNumElements() != 2)
    return node.fail("input 'values' must hold [off_value, on_value]");
  auto indexType = NodeContext::typeOf(*indices);
  FailureOr<int64_t> axis = node.normalizeAxis(*axisAttr, indexType.getRank() + 1, "axis");
  if (failed(axis))
    return failure();

  OpBuilder &b = node.builder();
  auto i64 = b.getI64Type();
  Value index = *indices;
  if (!indexType.getElementType().isInteger(64)) {
    FailureOr<Value> cast = node.createInferred1<CastOp>(index, TypeAttr::get(i64));
    if (failed(cast))
      return failure();
    index = *cast;
  }
  // A negative index counts from the end: index + depth where index < 0.
  auto scalarI64 = [&](int64_t v) {
    return node.constant(DenseElementsAttr::get(RankedTensorType::get({}, i64), v));
  };
  FailureOr<Value> negative = node.createInferred1<LessOp>(index, scalarI64(0));
  if (failed(negative))
    return failure();
  FailureOr<Value> wrapped = node.createInferred1<AddOp>(index, scalarI64(depth));
  if (failed(wrapped))
    return failure();
  FailureOr<Value> resolved = node.createInferred1<WhereOp>(*negative, *wrapped, index);
  SmallVector<int64_t> expanded(indexType.getShape());
  expanded.insert(expanded.begin() + *axis, 1);
  SmallVector<int64_t> positionsShape(expanded.size(), 1);
  positionsShape[*axis] = depth;
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < depth; ++i)
    positions.push_back(i);
  if (failed(resolved))
    return failure();
  FailureOr<Value> unsqueezed =
      node.createTyped1<ReshapeOp>(RankedTensorType::get(expanded, i64), *resolved);
  if (failed(unsqueezed))
    return failure();
  FailureOr<Value> hot = node.createInferred1<EqualOp>(
      *unsqueezed, node.constant(DenseElementsAttr::get(
                       RankedTensorType::get(positionsShape, i64), ArrayRef<int64_t>(positions))));
  if (failed(hot))
    return failure();
  auto scalarType = RankedTensorType::get({}, values->getElementType());
  SmallVector<Attribute> pair(values->getValues<Attribute>());
  Value off = node.constant(DenseElementsAttr::get(scalarType, pair[0]));
  Value on = node.constant(DenseElementsAttr::get(scalarType, pair[1]));
  return node.setOutput(node.createInferred1<WhereOp>(*hot, on, off));
}

} // namespace shardc::onnx_import
