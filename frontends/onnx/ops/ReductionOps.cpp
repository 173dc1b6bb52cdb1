//===- ReductionOps.cpp - ReduceMean, ReduceSum, ReduceMax, ArgMax ----------------------===//
//
// ONNX moved Reduce* axes from an attribute to input 1: ReduceSum in opset 13, ReduceMean and
// ReduceMax in opset 18. Absent or empty axes mean "all axes", unless noop_with_empty_axes is
// set (then the op is the identity). graph.reduce_* takes sorted, non-negative, non-empty
// axes, so every form is resolved here.
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/ops/OpImporters.h"

#include "frontends/onnx/ImportLimits.h"
#include "frontends/onnx/NodeContext.h"

#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

// The axes as written, nullopt when absent; checks that the node uses its opset's form.
FailureOr<std::optional<SmallVector<int64_t>>> readAxes(NodeContext &node, int64_t axesInputSince) {
  using Result = std::optional<SmallVector<int64_t>>;
  if (node.opset() >= axesInputSince) {
    if (node.findAttr("axes"))
      return node.fail("takes its axes as input 'axes' from opset " +
                       std::to_string(axesInputSince) + ", not as an attribute");
    if (!node.hasInput(1))
      return Result();
    FailureOr<SmallVector<int64_t>> axes = node.constantInts(1, "axes", kMaxRank);
    if (failed(axes))
      return failure();
    return Result(*axes);
  }
  if (node.hasInput(1))
    return node.fail("takes its axes as an attribute before opset " +
                     std::to_string(axesInputSince) + ", not as an input");
  return node.intsAttr("axes");
}

template <typename OpT> LogicalResult importReduce(NodeContext &node, int64_t axesInputSince) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  FailureOr<int64_t> keepdims = node.intAttr("keepdims", 1);
  FailureOr<int64_t> noop = node.intAttr("noop_with_empty_axes", 0);
  FailureOr<std::optional<SmallVector<int64_t>>> axes = readAxes(node, axesInputSince);
  if (failed(x) || failed(keepdims) || failed(noop) || failed(axes))
    return failure();
  int64_t rank = NodeContext::typeOf(*x).getRank();
  SmallVector<int64_t> requested;
  if (*axes && !(*axes)->empty()) {
    requested = **axes;
  } else if (*noop != 0) {
    return node.setOutput(node.createTyped1<IdentityOp>(x->getType(), *x));
  } else {
    for (int64_t d = 0; d < rank; ++d)
      requested.push_back(d);
  }
  FailureOr<SmallVector<int64_t>> normalized = node.normalizeAxes(requested, rank, "axis");
  if (failed(normalized))
    return failure();
  // Reducing a scalar over all (no) axes leaves it unchanged.
  if (normalized->empty())
    return node.setOutput(node.createTyped1<IdentityOp>(x->getType(), *x));
  OpBuilder &builder = node.builder();
  return node.setOutput(node.createInferred1<OpT>(*x, builder.getDenseI64ArrayAttr(*normalized),
                                                  builder.getBoolAttr(*keepdims != 0)));
}

} // namespace

LogicalResult importReduceMean(NodeContext &node) {
  return importReduce<ReduceMeanOp>(node, /*axesInputSince=*/18);
}
LogicalResult importReduceSum(NodeContext &node) {
  return importReduce<ReduceSumOp>(node, /*axesInputSince=*/13);
}
LogicalResult importReduceMax(NodeContext &node) {
  return importReduce<ReduceMaxOp>(node, /*axesInputSince=*/18);
}

LogicalResult importArgMax(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  FailureOr<int64_t> axis = node.intAttr("axis", 0);
  FailureOr<int64_t> keepdims = node.intAttr("keepdims", 1);
  FailureOr<int64_t> selectLast = node.intAttr("select_last_index", 0);
  if (failed(x) || failed(axis) || failed(keepdims) || failed(selectLast))
    return failure();
  FailureOr<SmallVector<int64_t>> normalized =
      node.normalizeAxes({*axis}, NodeContext::typeOf(*x).getRank(), "axis");
  if (failed(normalized))
    return failure();
  OpBuilder &builder = node.builder();
  return node.setOutput(node.createInferred1<ArgMaxOp>(
      *x, builder.getI64IntegerAttr(normalized->front()), builder.getBoolAttr(*keepdims != 0),
      builder.getBoolAttr(*selectLast != 0)));
}

} // namespace shardc::onnx_import
