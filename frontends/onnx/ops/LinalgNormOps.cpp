//===- LinalgNormOps.cpp - MatMul, Gemm, LayerNormalization, Softmax, LogSoftmax --------===//
#include "frontends/onnx/ops/OpImporters.h"

#include "frontends/onnx/NodeContext.h"

#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

// Opset 13 semantics: normalise over the single dimension `axis` (default -1).
template <typename OpT> LogicalResult importSoftmaxLike(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  FailureOr<int64_t> axis = node.intAttr("axis", -1);
  if (failed(x) || failed(axis))
    return failure();
  FailureOr<int64_t> normalized =
      node.normalizeAxis(*axis, NodeContext::typeOf(*x).getRank(), "axis");
  if (failed(normalized))
    return failure();
  return node.setOutput(
      node.createTyped1<OpT>(x->getType(), *x, node.builder().getI64IntegerAttr(*normalized)));
}

} // namespace

LogicalResult importMatMul(NodeContext &node) {
  FailureOr<Value> a = node.requiredInput(0, "A");
  FailureOr<Value> b = node.requiredInput(1, "B");
  if (failed(a) || failed(b))
    return failure();
  return node.setOutput(node.createInferred1<MatMulOp>(*a, *b));
}

// C is optional (opset 11+) and broadcasts unidirectionally to [M, N]; graph.gemm checks it.
LogicalResult importGemm(NodeContext &node) {
  FailureOr<Value> a = node.requiredInput(0, "A");
  FailureOr<Value> b = node.requiredInput(1, "B");
  FailureOr<float> alpha = node.floatAttr("alpha", 1.0f);
  FailureOr<float> beta = node.floatAttr("beta", 1.0f);
  FailureOr<int64_t> transA = node.intAttr("transA", 0);
  FailureOr<int64_t> transB = node.intAttr("transB", 0);
  if (failed(a) || failed(b) || failed(alpha) || failed(beta) || failed(transA) || failed(transB))
    return failure();
  OpBuilder &builder = node.builder();
  return node.setOutput(node.createInferred1<GemmOp>(
      *a, *b, node.input(2), builder.getF32FloatAttr(*alpha), builder.getF32FloatAttr(*beta),
      builder.getBoolAttr(*transA != 0), builder.getBoolAttr(*transB != 0)));
}

// Opset 17. Bias and the Mean/InvStdDev outputs are optional; graph.layer_norm always has
// all three results and the node binds those it names. Statistics are computed in f32, so
// stash_type must be 1 (float), its default.
LogicalResult importLayerNormalization(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  FailureOr<Value> scale = node.requiredInput(1, "Scale");
  FailureOr<int64_t> axis = node.intAttr("axis", -1);
  FailureOr<float> epsilon = node.floatAttr("epsilon", 1e-5f);
  FailureOr<int64_t> stashType = node.intAttr("stash_type", onnx::TensorProto::FLOAT);
  if (failed(x) || failed(scale) || failed(axis) || failed(epsilon) || failed(stashType))
    return failure();
  if (*stashType != onnx::TensorProto::FLOAT)
    return node.fail("stash_type " + std::to_string(*stashType) +
                     " is not supported (only 1, float32)");
  FailureOr<int64_t> normalized =
      node.normalizeAxis(*axis, NodeContext::typeOf(*x).getRank(), "axis");
  if (failed(normalized))
    return failure();
  OpBuilder &builder = node.builder();
  auto results = node.createInferred<LayerNormOp>(3, *x, *scale, node.input(2),
                                                  builder.getI64IntegerAttr(*normalized),
                                                  builder.getF32FloatAttr(*epsilon));
  if (failed(results))
    return failure();
  return node.setOutputs(*results);
}

LogicalResult importSoftmax(NodeContext &node) { return importSoftmaxLike<SoftmaxOp>(node); }
LogicalResult importLogSoftmax(NodeContext &node) { return importSoftmaxLike<LogSoftmaxOp>(node); }

} // namespace shardc::onnx_import
