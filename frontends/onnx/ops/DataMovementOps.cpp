//===- DataMovementOps.cpp - Transpose, Concat, Split, Slice, Gather, Trilu -------------===//
#include "frontends/onnx/ops/OpImporters.h"

#include "frontends/onnx/ImportLimits.h"
#include "frontends/onnx/NodeContext.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"
#include "shardc/Lowering/ConstantEvaluator.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

// Split sizes from the opset's forms: the `split` input (13+), `num_outputs` (18+: chunks of
// ceil(dim / n), the last one smaller), or neither (equal parts, one per output).
FailureOr<SmallVector<int64_t>> splitSizes(NodeContext &node, int64_t dim) {
  int64_t outputs = node.numOutputs();
  FailureOr<std::optional<int64_t>> numOutputs = node.optionalIntAttr("num_outputs");
  if (failed(numOutputs))
    return failure();
  if (node.findAttr("split"))
    return node.fail("attribute 'split' was replaced by input 'split' in opset 13");
  if (*numOutputs && node.opset() < 18)
    return node.fail("attribute 'num_outputs' needs opset 18");
  if (node.hasInput(1)) {
    if (*numOutputs)
      return node.fail("input 'split' and attribute 'num_outputs' must not both be given");
    FailureOr<SmallVector<int64_t>> sizes = node.constantInts(1, "split", outputs);
    if (failed(sizes))
      return failure();
    if (static_cast<int64_t>(sizes->size()) != outputs)
      return node.fail("input 'split' has " + std::to_string(sizes->size()) + " sizes for " +
                       std::to_string(outputs) + " outputs");
    return sizes;
  }
  if (*numOutputs) {
    int64_t n = **numOutputs;
    if (n != outputs)
      return node.fail("num_outputs is " + std::to_string(n) + " but the node has " +
                       std::to_string(outputs) + " outputs");
    int64_t chunk = (dim + n - 1) / n;
    int64_t last = dim - chunk * (n - 1);
    if (last < 0)
      return node.fail("cannot split dimension of size " + std::to_string(dim) + " into " +
                       std::to_string(n) + " chunks of " + std::to_string(chunk));
    SmallVector<int64_t> sizes(n - 1, chunk);
    sizes.push_back(last);
    return sizes;
  }
  if (dim % outputs != 0)
    return node.fail("cannot split dimension of size " + std::to_string(dim) + " into " +
                     std::to_string(outputs) + " equal parts");
  return SmallVector<int64_t>(outputs, dim / outputs);
}

// One axis of ONNX Slice, clamped as the specification says: negative start/end count from
// the end; with step > 0 start and end are clamped to [0, dim]; with step < 0 start to
// [0, dim - 1] and end to [-1, dim - 1] (so INT64_MIN/INT64_MAX mean "to the very end").
// |step| is capped at max(dim, 1): that selects the same elements and keeps the dialect's
// length arithmetic far from overflow.
void normalizeSliceAxis(int64_t dim, int64_t &start, int64_t &end, int64_t &step) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::min<int64_t>(std::max<int64_t>(start, 0), dim - 1);
    end = std::min<int64_t>(std::max<int64_t>(end, -1), dim - 1);
  }
  int64_t maxStep = std::max<int64_t>(dim, 1);
  if (step > maxStep)
    step = maxStep;
  else if (step < -maxStep)
    step = -maxStep;
}

// Constant indices are checked against the axis size here, so an out-of-range index is an
// import error rather than a runtime one; negative indices stay (the kernel handles them).
LogicalResult checkConstantIndices(NodeContext &node, Value indices, int64_t dim) {
  std::optional<DenseElementsAttr> values = getConstantValue(indices);
  if (!values || values->getNumElements() > (int64_t(1) << 20))
    return success();
  for (const APInt &v : values->getValues<APInt>()) {
    int64_t i = v.getSExtValue();
    if (i < -dim || i >= dim)
      return node.fail("index " + std::to_string(i) + " is out of range for an axis of size " +
                       std::to_string(dim));
  }
  return success();
}

} // namespace

// perm defaults to reversing the dimensions.
LogicalResult importTranspose(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  FailureOr<std::optional<SmallVector<int64_t>>> perm = node.intsAttr("perm");
  if (failed(x) || failed(perm))
    return failure();
  SmallVector<int64_t> order;
  if (*perm)
    order = **perm;
  else
    for (int64_t d = NodeContext::typeOf(*x).getRank() - 1; d >= 0; --d)
      order.push_back(d);
  return node.setOutput(
      node.createInferred1<TransposeOp>(*x, node.builder().getDenseI64ArrayAttr(order)));
}

LogicalResult importConcat(NodeContext &node) {
  FailureOr<std::optional<int64_t>> axis = node.optionalIntAttr("axis");
  if (failed(axis))
    return failure();
  if (!*axis)
    return node.fail("attribute 'axis' is required");
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < node.numInputs(); ++i) {
    FailureOr<Value> v = node.requiredInput(i, "inputs");
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  FailureOr<int64_t> normalized =
      node.normalizeAxis(**axis, NodeContext::typeOf(inputs[0]).getRank(), "axis");
  if (failed(normalized))
    return failure();
  return node.setOutput(node.createInferred1<ConcatOp>(
      ValueRange(inputs), node.builder().getI64IntegerAttr(*normalized)));
}

LogicalResult importSplit(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  FailureOr<int64_t> axis = node.intAttr("axis", 0);
  if (failed(x) || failed(axis))
    return failure();
  RankedTensorType type = NodeContext::typeOf(*x);
  FailureOr<int64_t> normalized = node.normalizeAxis(*axis, type.getRank(), "axis");
  if (failed(normalized))
    return failure();
  FailureOr<SmallVector<int64_t>> sizes = splitSizes(node, type.getDimSize(*normalized));
  if (failed(sizes))
    return failure();
  OpBuilder &builder = node.builder();
  auto results =
      node.createInferred<SplitOp>(sizes->size(), *x, builder.getI64IntegerAttr(*normalized),
                                   builder.getDenseI64ArrayAttr(*sizes));
  if (failed(results))
    return failure();
  return node.setOutputs(*results);
}

// Resolves starts/ends/axes/steps (inputs since opset 10) into graph.slice's full
// per-dimension form.
LogicalResult importSlice(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> dims = NodeContext::typeOf(*x).getShape();
  int64_t rank = static_cast<int64_t>(dims.size());
  FailureOr<SmallVector<int64_t>> starts = node.constantInts(1, "starts", rank);
  FailureOr<SmallVector<int64_t>> ends = failed(starts) ? FailureOr<SmallVector<int64_t>>(failure())
                                                        : node.constantInts(2, "ends", rank);
  if (failed(starts) || failed(ends))
    return failure();
  size_t n = starts->size();
  SmallVector<int64_t> axes, steps(n, 1);
  for (size_t k = 0; k < n; ++k)
    axes.push_back(static_cast<int64_t>(k));
  if (node.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> given = node.constantInts(3, "axes", rank);
    if (failed(given))
      return failure();
    axes = *given;
  }
  if (node.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> given = node.constantInts(4, "steps", rank);
    if (failed(given))
      return failure();
    steps = *given;
  }
  if (ends->size() != n || axes.size() != n || steps.size() != n)
    return node.fail("starts, ends, axes and steps must have the same length");

  SmallVector<int64_t> fullStarts(rank, 0), fullEnds(dims), fullSteps(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (size_t k = 0; k < n; ++k) {
    FailureOr<int64_t> axis = node.normalizeAxis(axes[k], rank, "axis");
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return node.fail("axis " + std::to_string(*axis) + " is given twice");
    seen[*axis] = true;
    if (steps[k] == 0)
      return node.fail("step must not be 0");
    int64_t start = (*starts)[k], end = (*ends)[k], step = steps[k];
    normalizeSliceAxis(dims[*axis], start, end, step);
    fullStarts[*axis] = start;
    fullEnds[*axis] = end;
    fullSteps[*axis] = step;
  }
  OpBuilder &builder = node.builder();
  return node.setOutput(node.createInferred1<SliceOp>(*x, builder.getDenseI64ArrayAttr(fullStarts),
                                                      builder.getDenseI64ArrayAttr(fullEnds),
                                                      builder.getDenseI64ArrayAttr(fullSteps)));
}

// Constant mode only; pads (and opset 18's axes) and the value are read at compile time.
LogicalResult importPad(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  FailureOr<std::string> mode = node.stringAttr("mode", "constant");
  if (failed(x) || failed(mode))
    return failure();
  if (*mode != "constant")
    return node.fail("mode '" + *mode + "' is not supported (only 'constant')");
  RankedTensorType type = NodeContext::typeOf(*x);
  const int64_t rank = type.getRank();
  FailureOr<SmallVector<int64_t>> given = node.constantInts(1, "pads", 2 * rank);
  if (failed(given))
    return failure();
  SmallVector<int64_t> axes;
  if (node.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> read = node.constantInts(3, "axes", rank);
    if (failed(read))
      return failure();
    if (failed(node.normalizeAxes(*read, rank, "axes"))) // range and duplicates
      return failure();
    // pads follow the order the axes are given in, not a sorted one.
    for (int64_t a : *read)
      axes.push_back(a < 0 ? a + rank : a);
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  const int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(given->size()) != 2 * n)
    return node.fail("pads has " + std::to_string(given->size()) + " entries, expected " +
                     std::to_string(2 * n) + " (2 per padded axis)");
  SmallVector<int64_t> pads(2 * rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    pads[axes[k]] = (*given)[k];
    pads[axes[k] + rank] = (*given)[k + n];
  }
  double value = 0.0;
  if (node.hasInput(2)) {
    FailureOr<DenseElementsAttr> constant = node.constantInput(2, "constant_value");
    if (failed(constant))
      return failure();
    if (constant->getNumElements() != 1)
      return node.fail("constant_value must hold one value");
    if (isa<FloatType>(constant->getElementType()))
      value = (*constant->getValues<APFloat>().begin()).convertToDouble();
    else if (constant->getElementType().isInteger(1))
      value = *constant->getValues<bool>().begin() ? 1.0 : 0.0;
    else
      value = static_cast<double>((*constant->getValues<APInt>().begin()).getSExtValue());
  }
  OpBuilder &builder = node.builder();
  return node.setOutput(node.createInferred1<PadOp>(*x, builder.getDenseI64ArrayAttr(pads),
                                                    builder.getF64FloatAttr(value)));
}

LogicalResult importGather(NodeContext &node) {
  FailureOr<Value> data = node.requiredInput(0, "data");
  FailureOr<Value> indices = node.requiredInput(1, "indices");
  FailureOr<int64_t> axis = node.intAttr("axis", 0);
  if (failed(data) || failed(indices) || failed(axis))
    return failure();
  RankedTensorType type = NodeContext::typeOf(*data);
  FailureOr<int64_t> normalized = node.normalizeAxis(*axis, type.getRank(), "axis");
  if (failed(normalized) ||
      failed(checkConstantIndices(node, *indices, type.getDimSize(*normalized))))
    return failure();
  // An embedding lookup of a table with a recorded padding row (TrainableRecord.h).
  IntegerAttr padding;
  if (*normalized == 0)
    if (std::optional<int64_t> row = node.graph().paddingIdxOf(node.proto().input(0))) {
      if (*row >= type.getDimSize(0))
        return node.fail("the recorded padding row " + std::to_string(*row) + " of '" +
                         node.proto().input(0) + "' is outside its " +
                         std::to_string(type.getDimSize(0)) + " rows");
      padding = node.builder().getI64IntegerAttr(*row);
    }
  return node.setOutput(node.createInferred1<GatherOp>(
      *data, *indices, node.builder().getI64IntegerAttr(*normalized), padding));
}

// The flat offsets into `data` of GatherElements' / ScatterElements' elements: element i of
// `indices` addresses data at i's position with its `axis` coordinate replaced by indices[i],
// i.e. the flat offset
//   base[i] + indices[i] * stride(axis),
// where base[i], the offset of i's position with axis coordinate 0, is a compile-time constant
// of the indices' shape. Negative indices count from the end of the axis. An index outside
// [-s, s) becomes offset N (one past the data), so the Gather or ScatterND that reads the
// offsets refuses it with its one-line out-of-range error instead of touching another element.
namespace {
FailureOr<Value> elementOffsets(NodeContext &node, Value data, Value indices, int64_t axis,
                                int64_t &total) {
  // The constant base offsets are materialised: cap them like any other tensor built at import.
  constexpr int64_t kMaxBaseElements = int64_t(1) << 26;
  RankedTensorType dataType = NodeContext::typeOf(data);
  RankedTensorType indexType = NodeContext::typeOf(indices);
  const int64_t rank = dataType.getRank();
  if (rank < 1 || indexType.getRank() != rank)
    return node.fail("indices must have the data's rank (" + std::to_string(rank) +
                     ", at least 1), got rank " + std::to_string(indexType.getRank()));
  FailureOr<int64_t> normalized = node.normalizeAxis(axis, rank, "axis");
  if (failed(normalized))
    return failure();
  ArrayRef<int64_t> dims = dataType.getShape(), out = indexType.getShape();
  for (int64_t d = 0; d < rank; ++d) {
    if (dims[d] == 0)
      return node.fail("data has an empty dimension " + std::to_string(d));
    if (d != *normalized && out[d] > dims[d])
      return node.fail("indices dim " + std::to_string(d) + " (" + std::to_string(out[d]) +
                       ") exceeds the data's (" + std::to_string(dims[d]) + ")");
  }
  std::string why;
  std::optional<int64_t> elements = checkedElementCount(dims, why);
  std::optional<int64_t> count = checkedElementCount(out, why);
  if (!elements || !count)
    return node.fail(why);
  total = *elements;
  if (*count > kMaxBaseElements)
    return node.fail("indices have " + std::to_string(*count) + " elements; at most " +
                     std::to_string(kMaxBaseElements) + " are supported");
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  // base[i]: row-major over the indices' shape, the axis coordinate left out.
  std::vector<int64_t> base(static_cast<size_t>(*count), 0);
  SmallVector<int64_t> coord(rank, 0);
  for (int64_t i = 0; i < *count; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset += d == *normalized ? 0 : coord[d] * strides[d];
    base[static_cast<size_t>(i)] = offset;
    for (int64_t d = rank - 1; d >= 0 && ++coord[d] == out[d]; --d)
      coord[d] = 0;
  }

  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type();
  auto scalar = [&](int64_t v) {
    return node.constant(DenseElementsAttr::get(RankedTensorType::get({}, i64), v));
  };
  Value index = indices;
  if (!indexType.getElementType().isInteger(64)) {
    FailureOr<Value> widened = node.createTyped1<CastOp>(
        RankedTensorType::get(out, i64), index, TypeAttr::get(i64));
    if (failed(widened))
      return failure();
    index = *widened;
  }
  const int64_t extent = dims[*normalized];
  Value zero = scalar(0), size = scalar(extent);
  // index + s where negative: Where(index < 0, index + s, index).
  FailureOr<Value> negative = node.createInferred1<LessOp>(index, zero);
  FailureOr<Value> wrapped = node.createInferred1<AddOp>(index, size);
  if (failed(negative) || failed(wrapped))
    return failure();
  FailureOr<Value> position = node.createInferred1<WhereOp>(*negative, *wrapped, index);
  if (failed(position))
    return failure();
  FailureOr<Value> below = node.createInferred1<LessOp>(*position, zero);
  FailureOr<Value> inside = node.createInferred1<LessOp>(*position, size);
  if (failed(below) || failed(inside))
    return failure();
  FailureOr<Value> notBelow = node.createTyped1<NotOp>(below->getType(), *below);
  if (failed(notBelow))
    return failure();
  FailureOr<Value> valid = node.createInferred1<AndOp>(*notBelow, *inside);
  FailureOr<Value> scaled = node.createInferred1<MulOp>(*position, scalar(strides[*normalized]));
  if (failed(valid) || failed(scaled))
    return failure();
  Value baseOffsets = node.constant(
      DenseElementsAttr::get(RankedTensorType::get(out, i64), ArrayRef<int64_t>(base)));
  FailureOr<Value> offsets = node.createInferred1<AddOp>(*scaled, baseOffsets);
  if (failed(offsets))
    return failure();
  return node.createInferred1<WhereOp>(*valid, *offsets, scalar(total));
}
} // namespace

// GatherElements (torch.gather) as a Gather of the flattened data at elementOffsets, whose
// gradient (a scatter-add into the data) and sharding rule exist.
LogicalResult importGatherElements(NodeContext &node) {
  FailureOr<Value> data = node.requiredInput(0, "data");
  FailureOr<Value> indices = node.requiredInput(1, "indices");
  FailureOr<int64_t> axis = node.intAttr("axis", 0);
  if (failed(data) || failed(indices) || failed(axis))
    return failure();
  int64_t total = 0;
  FailureOr<Value> checked = elementOffsets(node, *data, *indices, *axis, total);
  if (failed(checked))
    return failure();
  RankedTensorType dataType = NodeContext::typeOf(*data);
  FailureOr<Value> flat = node.createTyped1<ReshapeOp>(
      RankedTensorType::get({total}, dataType.getElementType()), *data);
  if (failed(flat))
    return failure();
  return node.setOutput(node.createInferred1<GatherOp>(
      *flat, *checked, node.builder().getI64IntegerAttr(0), IntegerAttr()));
}

// TopK (torch.topk), composed of k passes over the axis, each taking the first position of the
// largest element not yet taken:
//   cur = where(taken, -inf, x);  m = max(cur);  idx = arg_max(cur == m and not taken)
//   taken = taken or (positions == idx)
// (the second argmax, over booleans, finds an untaken maximum even where x holds -inf), the
// positions concatenated in order (sorted, as sorted=1 asks and sorted=0 allows) and the values
// gathered at them as GatherElements does, so the gradient reaches x at those positions. With
// largest=0 the passes run on -x. Every op has its rule, gradient and kernels; the cost is k
// passes, so k is bounded, and float inputs only (the masking value).
LogicalResult importTopK(NodeContext &node) {
  constexpr int64_t kMaxTopK = 64;
  FailureOr<Value> x = node.requiredInput(0, "X");
  FailureOr<DenseElementsAttr> kValue = node.constantInput(1, "K");
  FailureOr<int64_t> axisAttr = node.intAttr("axis", -1);
  FailureOr<int64_t> largest = node.intAttr("largest", 1);
  FailureOr<int64_t> sortedAttr = node.intAttr("sorted", 1);
  if (failed(x) || failed(kValue) || failed(axisAttr) || failed(largest) || failed(sortedAttr))
    return failure();
  RankedTensorType type = NodeContext::typeOf(*x);
  if (!isa<FloatType>(type.getElementType()))
    return node.fail("input 'X' is not a float tensor (TopK is supported on floats)");
  if (kValue->getNumElements() != 1 || !kValue->getElementType().isInteger(64))
    return node.fail("input 'K' must hold one int64");
  FailureOr<int64_t> axis = node.normalizeAxis(*axisAttr, type.getRank(), "axis");
  if (failed(axis))
    return failure();
  const int64_t k = kValue->getValues<APInt>()[0].getSExtValue(), extent = type.getDimSize(*axis);
  if (k < 1 || k > extent)
    return node.fail("k = " + std::to_string(k) + " is not in [1, " + std::to_string(extent) +
                     "], the size of axis " + std::to_string(*axis));
  if (k > kMaxTopK)
    return node.fail("k = " + std::to_string(k) + " is larger than the " +
                     std::to_string(kMaxTopK) + " TopK is supported for (one pass per element)");

  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  Value keys = *x;
  if (*largest == 0) {
    FailureOr<Value> negated = node.createTyped1<NegOp>(type, *x);
    if (failed(negated))
      return failure();
    keys = *negated;
  }
  SmallVector<int64_t> along(type.getRank(), 1);
  along[*axis] = extent;
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < extent; ++i)
    positions.push_back(i);
  Value position = node.constant(
      DenseElementsAttr::get(RankedTensorType::get(along, i64), ArrayRef<int64_t>(positions)));
  Value negInf = node.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, type.getElementType()),
      b.getFloatAttr(type.getElementType(),
                     APFloat::getInf(cast<FloatType>(type.getElementType()).getFloatSemantics(),
                                     true))));
  Value taken = node.constant(DenseElementsAttr::get(RankedTensorType::get(type.getShape(), i1),
                                                     false));
  auto axisAttrValue = b.getI64IntegerAttr(*axis);
  auto yes = b.getBoolAttr(true), no = b.getBoolAttr(false);
  SmallVector<Value> picked;
  for (int64_t pass = 0; pass < k; ++pass) {
    FailureOr<Value> cur = node.createInferred1<WhereOp>(taken, negInf, keys);
    if (failed(cur))
      return failure();
    FailureOr<Value> peak =
        node.createInferred1<ReduceMaxOp>(*cur, b.getDenseI64ArrayAttr({*axis}), yes);
    if (failed(peak))
      return failure();
    FailureOr<Value> atPeak = node.createInferred1<EqualOp>(*cur, *peak);
    FailureOr<Value> free = node.createTyped1<NotOp>(taken.getType(), taken);
    if (failed(atPeak) || failed(free))
      return failure();
    FailureOr<Value> candidate = node.createInferred1<AndOp>(*atPeak, *free);
    if (failed(candidate))
      return failure();
    FailureOr<Value> asFloat = node.createTyped1<CastOp>(
        RankedTensorType::get(type.getShape(), type.getElementType()), *candidate,
        TypeAttr::get(type.getElementType()));
    if (failed(asFloat))
      return failure();
    FailureOr<Value> index = node.createInferred1<ArgMaxOp>(*asFloat, axisAttrValue, yes, no);
    if (failed(index))
      return failure();
    picked.push_back(*index);
    if (pass + 1 == k)
      break;
    FailureOr<Value> hit = node.createInferred1<EqualOp>(position, *index);
    if (failed(hit))
      return failure();
    FailureOr<Value> now = node.createInferred1<OrOp>(taken, *hit);
    if (failed(now))
      return failure();
    taken = *now;
  }
  Value indices = picked.front();
  if (picked.size() > 1) {
    FailureOr<Value> joined = node.createInferred1<ConcatOp>(ValueRange(picked), axisAttrValue);
    if (failed(joined))
      return failure();
    indices = *joined;
  }
  int64_t total = 0;
  FailureOr<Value> offsets = elementOffsets(node, *x, indices, *axis, total);
  if (failed(offsets))
    return failure();
  FailureOr<Value> flat = node.createTyped1<ReshapeOp>(
      RankedTensorType::get({total}, type.getElementType()), *x);
  if (failed(flat))
    return failure();
  FailureOr<Value> values = node.createInferred1<GatherOp>(
      *flat, *offsets, b.getI64IntegerAttr(0), IntegerAttr());
  if (failed(values))
    return failure();
  return node.setOutputs({*values, indices});
}

// ScatterElements (torch.Tensor.scatter, scatter_add with reduction "add") as a ScatterND of
// the flattened data at elementOffsets (one offset per update, [count, 1]), reshaped back: its
// kernel, sharding rule and gradient (ScatterND's, for "none" and "add") serve it.
LogicalResult importScatterElements(NodeContext &node) {
  FailureOr<Value> data = node.requiredInput(0, "data");
  FailureOr<Value> indices = node.requiredInput(1, "indices");
  FailureOr<Value> updates = node.requiredInput(2, "updates");
  FailureOr<int64_t> axis = node.intAttr("axis", 0);
  FailureOr<std::string> reduction = node.stringAttr("reduction", "none");
  if (failed(data) || failed(indices) || failed(updates) || failed(axis) || failed(reduction))
    return failure();
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, *reduction))
    return node.fail("reduction '" + *reduction + "' is not one of none, add, mul, max, min");
  RankedTensorType dataType = NodeContext::typeOf(*data);
  RankedTensorType indexType = NodeContext::typeOf(*indices);
  RankedTensorType updateType = NodeContext::typeOf(*updates);
  if (updateType.getShape() != indexType.getShape())
    return node.fail("updates " + formatShape(updateType.getShape()) +
                     " must have the indices' shape " + formatShape(indexType.getShape()));
  int64_t total = 0;
  FailureOr<Value> offsets = elementOffsets(node, *data, *indices, *axis, total);
  if (failed(offsets))
    return failure();
  const int64_t count = indexType.getNumElements();
  Type element = dataType.getElementType();
  FailureOr<Value> flat =
      node.createTyped1<ReshapeOp>(RankedTensorType::get({total}, element), *data);
  FailureOr<Value> at = node.createTyped1<ReshapeOp>(
      RankedTensorType::get({count, 1}, node.builder().getI64Type()), *offsets);
  FailureOr<Value> values =
      node.createTyped1<ReshapeOp>(RankedTensorType::get({count}, element), *updates);
  if (failed(flat) || failed(at) || failed(values))
    return failure();
  FailureOr<Value> scattered = node.createTyped1<ScatterNDOp>(
      flat->getType(), *flat, *at, *values, node.builder().getStringAttr(*reduction));
  if (failed(scattered))
    return failure();
  return node.setOutput(node.createTyped1<ReshapeOp>(dataType, *scattered));
}

// k (opset 14 input, default 0) must be a compile-time constant: it becomes an attribute.
LogicalResult importTrilu(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  FailureOr<int64_t> upper = node.intAttr("upper", 1);
  if (failed(x) || failed(upper))
    return failure();
  int64_t k = 0;
  if (node.hasInput(1)) {
    FailureOr<int64_t> given = node.constantInt(1, "k");
    if (failed(given))
      return failure();
    k = *given;
  }
  OpBuilder &builder = node.builder();
  return node.setOutput(node.createTyped1<TriluOp>(
      x->getType(), *x, builder.getBoolAttr(*upper != 0), builder.getI64IntegerAttr(k)));
}

// The axis input is read at compile time.
LogicalResult importCumSum(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "x");
  FailureOr<int64_t> exclusive = node.intAttr("exclusive", 0);
  FailureOr<int64_t> reverse = node.intAttr("reverse", 0);
  if (failed(x) || failed(exclusive) || failed(reverse))
    return failure();
  FailureOr<int64_t> axis = node.constantInt(1, "axis");
  if (failed(axis))
    return failure();
  FailureOr<int64_t> normalized =
      node.normalizeAxis(*axis, NodeContext::typeOf(*x).getRank(), "axis");
  if (failed(normalized))
    return failure();
  OpBuilder &b = node.builder();
  return node.setOutput(node.createTyped1<CumSumOp>(x->getType(), *x,
                                                    b.getI64IntegerAttr(*normalized),
                                                    b.getBoolAttr(*exclusive != 0),
                                                    b.getBoolAttr(*reverse != 0)));
}

// Opset 16 added the reductions add and mul, 18 max and min.
LogicalResult importScatterND(NodeContext &node) {
  FailureOr<Value> data = node.requiredInput(0, "data");
  FailureOr<Value> indices = node.requiredInput(1, "indices");
  FailureOr<Value> updates = node.requiredInput(2, "updates");
  FailureOr<std::string> reduction = node.stringAttr("reduction", "none");
  if (failed(data) || failed(indices) || failed(updates) || failed(reduction))
    return failure();
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, *reduction))
    return node.fail("reduction '" + *reduction + "' is not one of none, add, mul, max, min");
  return node.setOutput(node.createTyped1<ScatterNDOp>(data->getType(), *data, *indices,
                                                       *updates,
                                                       node.builder().getStringAttr(*reduction)));
}

} // namespace shardc::onnx_import
