//===- ReductionOps.cpp - the Reduce* family and ArgMax ---------------------------------===//
//
// ONNX moved Reduce* axes from an attribute to input 1: ReduceSum in opset 13, the others in
// opset 18. Absent or empty axes mean "all axes", unless noop_with_empty_axes is set (then the
// op is the identity). graph.reduce_* takes sorted, non-negative, non-empty axes, so every form
// is resolved here. ReduceMean, ReduceSum and ReduceMax are graph ops; the rest of the family
// is composed of them and elementwise ops (ReduceL2 = sqrt(sum(x*x)), as `tensor.norm` and
// `weight_norm` export), whose gradients, sharding rules and kernels they take.
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

// A reduction over `axes` (sorted, non-empty) of `x`: builds the op(s), returns the result.
using ReductionBuilder = function_ref<FailureOr<Value>(NodeContext &, Value x,
                                                       ArrayRef<int64_t> axes, bool keepdims)>;

// Reads the node's axes and keepdims and reduces input 0 with `reduce`. The identity cases
// (noop_with_empty_axes with no axes, a scalar) apply `whole` to the input instead: the value
// each element reduces to on its own (x for a sum, |x| for L1, x*x for SumSquare, ...).
LogicalResult importReduce(NodeContext &node, int64_t axesInputSince, ReductionBuilder reduce,
                           function_ref<FailureOr<Value>(NodeContext &, Value)> whole) {
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
    return node.setOutput(whole(node, *x));
  } else {
    for (int64_t d = 0; d < rank; ++d)
      requested.push_back(d);
  }
  FailureOr<SmallVector<int64_t>> normalized = node.normalizeAxes(requested, rank, "axis");
  if (failed(normalized))
    return failure();
  // Reducing a scalar over all (no) axes leaves it as it is.
  if (normalized->empty())
    return node.setOutput(whole(node, *x));
  return node.setOutput(reduce(node, *x, *normalized, *keepdims != 0));
}

template <typename OpT>
FailureOr<Value> reduceWith(NodeContext &node, Value x, ArrayRef<int64_t> axes, bool keepdims) {
  OpBuilder &builder = node.builder();
  return node.createInferred1<OpT>(x, builder.getDenseI64ArrayAttr(axes),
                                   builder.getBoolAttr(keepdims));
}

FailureOr<Value> identity(NodeContext &node, Value x) {
  return node.createTyped1<IdentityOp>(x.getType(), x);
}
FailureOr<Value> squared(NodeContext &node, Value x) {
  return node.createInferred1<MulOp>(x, x);
}
FailureOr<Value> magnitude(NodeContext &node, Value x) {
  return node.createTyped1<AbsOp>(x.getType(), x);
}

// Then `f` of the reduction (sqrt of a sum of squares, log of a sum).
template <typename OpT>
FailureOr<Value> then(FailureOr<Value> reduced, NodeContext &node) {
  if (failed(reduced))
    return failure();
  return node.createTyped1<OpT>(reduced->getType(), *reduced);
}

// sum(map(x)) over the axes: the sum of squares, of magnitudes.
template <FailureOr<Value> (*Map)(NodeContext &, Value)>
FailureOr<Value> sumOf(NodeContext &node, Value x, ArrayRef<int64_t> axes, bool keepdims) {
  FailureOr<Value> mapped = Map(node, x);
  if (failed(mapped))
    return failure();
  return reduceWith<ReduceSumOp>(node, *mapped, axes, keepdims);
}

LogicalResult requireFloat(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  if (failed(x))
    return failure();
  if (!NodeContext::typeOf(*x).getElementType().isF32())
    return node.fail("input data must be float32");
  return success();
}

} // namespace

LogicalResult importReduceMean(NodeContext &node) {
  return importReduce(node, /*axesInputSince=*/18, reduceWith<ReduceMeanOp>, identity);
}
LogicalResult importReduceSum(NodeContext &node) {
  return importReduce(node, /*axesInputSince=*/13, reduceWith<ReduceSumOp>, identity);
}
LogicalResult importReduceMax(NodeContext &node) {
  return importReduce(node, /*axesInputSince=*/18, reduceWith<ReduceMaxOp>, identity);
}

// min(x) = -max(-x).
LogicalResult importReduceMin(NodeContext &node) {
  return importReduce(
      node, /*axesInputSince=*/18,
      [](NodeContext &node, Value x, ArrayRef<int64_t> axes, bool keepdims) -> FailureOr<Value> {
        FailureOr<Value> negated = node.createTyped1<NegOp>(x.getType(), x);
        if (failed(negated))
          return failure();
        return then<NegOp>(reduceWith<ReduceMaxOp>(node, *negated, axes, keepdims), node);
      },
      identity);
}

LogicalResult importReduceSumSquare(NodeContext &node) {
  return importReduce(node, /*axesInputSince=*/18, sumOf<squared>, squared);
}

LogicalResult importReduceL1(NodeContext &node) {
  return importReduce(node, /*axesInputSince=*/18, sumOf<magnitude>, magnitude);
}

// sqrt(sum(x * x)). Its gradient x / norm is NaN where the norm is 0 (PyTorch's is 0 there);
// the norms `weight_norm` and `tensor.norm` take are of weights and activations, never 0.
LogicalResult importReduceL2(NodeContext &node) {
  if (failed(requireFloat(node)))
    return failure();
  return importReduce(
      node, /*axesInputSince=*/18,
      [](NodeContext &node, Value x, ArrayRef<int64_t> axes, bool keepdims) {
        return then<SqrtOp>(sumOf<squared>(node, x, axes, keepdims), node);
      },
      magnitude);
}

LogicalResult importReduceLogSum(NodeContext &node) {
  if (failed(requireFloat(node)))
    return failure();
  return importReduce(
      node, /*axesInputSince=*/18,
      [](NodeContext &node, Value x, ArrayRef<int64_t> axes, bool keepdims) -> FailureOr<Value> {
        return then<LogOp>(reduceWith<ReduceSumOp>(node, x, axes, keepdims), node);
      },
      [](NodeContext &node, Value x) { return node.createTyped1<LogOp>(x.getType(), x); });
}

// log(sum(exp(x - m))) + m with m the maximum over the axes, so that no exp overflows.
LogicalResult importReduceLogSumExp(NodeContext &node) {
  if (failed(requireFloat(node)))
    return failure();
  return importReduce(
      node, /*axesInputSince=*/18,
      [](NodeContext &node, Value x, ArrayRef<int64_t> axes, bool keepdims) -> FailureOr<Value> {
        FailureOr<Value> peak = reduceWith<ReduceMaxOp>(node, x, axes, /*keepdims=*/true);
        if (failed(peak))
          return failure();
        FailureOr<Value> exp = then<ExpOp>(node.createInferred1<SubOp>(x, *peak), node);
        if (failed(exp))
          return failure();
        FailureOr<Value> log =
            then<LogOp>(reduceWith<ReduceSumOp>(node, *exp, axes, keepdims), node);
        FailureOr<Value> m =
            keepdims ? peak : reduceWith<ReduceMaxOp>(node, x, axes, /*keepdims=*/false);
        if (failed(log) || failed(m))
          return failure();
        return node.createInferred1<AddOp>(*log, *m);
      },
      identity);
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
