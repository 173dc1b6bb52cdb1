//===- SequenceOps.cpp - ONNX sequences as lists of tensors known at import -------------===//
//
// The exporter writes Python lists built in a loop as ONNX sequences: SplitToSequence, then a
// Loop whose body reads one element with SequenceAt and appends a result with SequenceInsert,
// then ConcatFromSequence. Once shapes are static and the Loop is unrolled (ControlFlowOps.cpp)
// every position is a compile-time constant, so a sequence is just a list of values: the
// importer binds the name to the list and each op picks, inserts or joins elements. Nothing
// of a sequence reaches the IR.
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/ImportLimits.h"
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/ops/OpImporters.h"

#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

// A position in [-size, size) (or [-size, size] where `endAllowed`, for an insertion) as a
// non-negative index; `absent` when the node leaves the input out.
FailureOr<int64_t> sequencePosition(NodeContext &node, unsigned input, llvm::StringRef name,
                                    int64_t size, bool endAllowed, int64_t absent = 0) {
  if (!node.hasInput(input))
    return absent;
  FailureOr<int64_t> position = node.constantInt(input, name);
  if (failed(position))
    return failure();
  const int64_t hi = endAllowed ? size : size - 1;
  if (*position < -size || *position > hi)
    return node.fail("position " + std::to_string(*position) + " is outside a sequence of " +
                     std::to_string(size) + " tensors");
  return *position < 0 ? *position + size : *position;
}

FailureOr<Value> withoutAxis(NodeContext &node, Value value, int64_t axis) {
  RankedTensorType type = NodeContext::typeOf(value);
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + axis);
  return node.createTyped1<SqueezeOp>(RankedTensorType::get(shape, type.getElementType()), value);
}


LogicalResult checkSameElementType(NodeContext &node, ArrayRef<Value> sequence, Value tensor) {
  if (sequence.empty())
    return success();
  Type theirs = NodeContext::typeOf(sequence.front()).getElementType();
  Type ours = NodeContext::typeOf(tensor).getElementType();
  if (theirs == ours)
    return success();
  std::string a, b;
  llvm::raw_string_ostream(a) << ours;
  llvm::raw_string_ostream(b) << theirs;
  return node.fail("a " + a + " tensor cannot join a sequence of " + b + " tensors");
}

} // namespace

FailureOr<Value> stackTensors(NodeContext &node, ArrayRef<Value> tensors, int64_t axis) {
  const int64_t rank = NodeContext::typeOf(tensors.front()).getRank();
  SmallVector<Value> parts;
  for (Value v : tensors) {
    RankedTensorType type = NodeContext::typeOf(v);
    if (type.getRank() != rank)
      return node.fail("the tensors to stack have different ranks");
    SmallVector<int64_t> shape(type.getShape());
    shape.insert(shape.begin() + axis, 1);
    FailureOr<Value> part =
        node.createTyped1<UnsqueezeOp>(RankedTensorType::get(shape, type.getElementType()), v);
    if (failed(part))
      return failure();
    parts.push_back(*part);
  }
  if (parts.size() == 1)
    return parts.front();
  return node.createInferred1<ConcatOp>(ValueRange(parts), node.builder().getI64IntegerAttr(axis));
}

LogicalResult importSequenceEmpty(NodeContext &node) {
  return node.setSequenceOutput(0, {});
}

LogicalResult importSequenceConstruct(NodeContext &node) {
  SmallVector<Value> elements;
  for (unsigned i = 0; i < node.numInputs(); ++i) {
    FailureOr<Value> v = node.requiredInput(i, "inputs");
    if (failed(v) || failed(checkSameElementType(node, elements, *v)))
      return failure();
    elements.push_back(*v);
  }
  return node.setSequenceOutput(0, std::move(elements));
}

// Without `split`: pieces of 1 along the axis (removed unless keepdims); a scalar split: pieces
// of that size, the last one smaller; a list: those sizes.
LogicalResult importSplitToSequence(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  FailureOr<int64_t> axisAttr = node.intAttr("axis", 0);
  FailureOr<int64_t> keepDims = node.intAttr("keepdims", 1);
  if (failed(x) || failed(axisAttr) || failed(keepDims))
    return failure();
  RankedTensorType type = NodeContext::typeOf(*x);
  if (type.getRank() == 0)
    return node.fail("input 'input' is a scalar: there is no axis to split");
  FailureOr<int64_t> axis = node.normalizeAxis(*axisAttr, type.getRank(), "axis");
  if (failed(axis))
    return failure();
  const int64_t length = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  bool dropAxis = false;
  if (!node.hasInput(1)) {
    if (length > kMaxSequenceLength)
      return node.fail("splitting " + std::to_string(length) + " pieces is more than shardc's " +
                       std::to_string(kMaxSequenceLength));
    sizes.assign(length, 1);
    dropAxis = *keepDims == 0;
  } else {
    FailureOr<DenseElementsAttr> split = node.constantInput(1, "split");
    if (failed(split))
      return failure();
    if (!split->getElementType().isInteger(64) && !split->getElementType().isInteger(32))
      return node.fail("input 'split' must be int32 or int64");
    auto splitType = cast<RankedTensorType>(split->getType());
    if (splitType.getRank() > 1)
      return node.fail("input 'split' must be a scalar or a list");
    SmallVector<int64_t> given;
    for (const APInt &v : split->getValues<APInt>())
      given.push_back(v.getSExtValue());
    if (splitType.getRank() == 0) {
      if (given[0] <= 0)
        return node.fail("a split of " + std::to_string(given[0]) + " is not positive");
      if (length / given[0] + 1 > kMaxSequenceLength)
        return node.fail("splitting " + std::to_string(length) + " into pieces of " +
                         std::to_string(given[0]) + " is more than shardc's " +
                         std::to_string(kMaxSequenceLength) + " pieces");
      for (int64_t start = 0; start < length; start += given[0])
        sizes.push_back(std::min(given[0], length - start));
    } else {
      if (static_cast<int64_t>(given.size()) > kMaxSequenceLength)
        return node.fail("a split into " + std::to_string(given.size()) +
                         " pieces is more than shardc's " + std::to_string(kMaxSequenceLength));
      int64_t total = 0;
      for (int64_t size : given) {
        if (size < 0)
          return node.fail("split sizes must not be negative (got " + std::to_string(size) + ")");
        total += size;
        if (total > length)
          break;
      }
      if (total != length)
        return node.fail("split sizes add up to more or less than dimension " +
                         std::to_string(*axis) + " (" + std::to_string(length) + ")");
      sizes = given;
    }
  }
  SmallVector<Value> pieces;
  if (sizes.size() == 1) {
    pieces.push_back(*x);
  } else if (!sizes.empty()) {
    auto results = node.createInferred<SplitOp>(sizes.size(), *x,
                                                node.builder().getI64IntegerAttr(*axis),
                                                node.builder().getDenseI64ArrayAttr(sizes));
    if (failed(results))
      return failure();
    pieces.assign(results->begin(), results->end());
  }
  if (dropAxis)
    for (Value &piece : pieces) {
      FailureOr<Value> squeezed = withoutAxis(node, piece, *axis);
      if (failed(squeezed))
        return failure();
      piece = *squeezed;
    }
  return node.setSequenceOutput(0, std::move(pieces));
}

LogicalResult importSequenceAt(NodeContext &node) {
  FailureOr<ArrayRef<Value>> sequence = node.sequenceInput(0, "input_sequence");
  if (failed(sequence))
    return failure();
  FailureOr<int64_t> at =
      sequencePosition(node, 1, "position", static_cast<int64_t>(sequence->size()), false);
  if (failed(at))
    return failure();
  return node.setTensorOutput(0, (*sequence)[*at]);
}

LogicalResult importSequenceInsert(NodeContext &node) {
  FailureOr<ArrayRef<Value>> sequence = node.sequenceInput(0, "input_sequence");
  FailureOr<Value> tensor = failed(sequence) ? FailureOr<Value>(failure())
                                             : node.requiredInput(1, "tensor");
  if (failed(tensor) || failed(checkSameElementType(node, *sequence, *tensor)))
    return failure();
  const int64_t size = static_cast<int64_t>(sequence->size());
  if (size >= kMaxSequenceLength)
    return node.fail("a sequence longer than " + std::to_string(kMaxSequenceLength) +
                     " tensors is not supported");
  FailureOr<int64_t> at = sequencePosition(node, 2, "position", size, true, /*absent=*/size);
  if (failed(at))
    return failure();
  SmallVector<Value> elements(sequence->begin(), sequence->end());
  elements.insert(elements.begin() + *at, *tensor);
  return node.setSequenceOutput(0, std::move(elements));
}

LogicalResult importSequenceErase(NodeContext &node) {
  FailureOr<ArrayRef<Value>> sequence = node.sequenceInput(0, "input_sequence");
  if (failed(sequence))
    return failure();
  const int64_t size = static_cast<int64_t>(sequence->size());
  if (size == 0)
    return node.fail("cannot erase from an empty sequence");
  FailureOr<int64_t> at = sequencePosition(node, 1, "position", size, false, /*absent=*/size - 1);
  if (failed(at))
    return failure();
  SmallVector<Value> elements(sequence->begin(), sequence->end());
  elements.erase(elements.begin() + *at);
  return node.setSequenceOutput(0, std::move(elements));
}

LogicalResult importSequenceLength(NodeContext &node) {
  FailureOr<ArrayRef<Value>> sequence = node.sequenceInput(0, "input_sequence");
  if (failed(sequence))
    return failure();
  auto type = RankedTensorType::get({}, node.builder().getI64Type());
  return node.setTensorOutput(
      0, node.constant(DenseElementsAttr::get(type, static_cast<int64_t>(sequence->size()))));
}

// Joined along `axis`, or with new_axis stacked along a new dimension there.
LogicalResult importConcatFromSequence(NodeContext &node) {
  FailureOr<ArrayRef<Value>> sequence = node.sequenceInput(0, "input_sequence");
  FailureOr<std::optional<int64_t>> axisAttr = node.optionalIntAttr("axis");
  FailureOr<int64_t> newAxis = node.intAttr("new_axis", 0);
  if (failed(sequence) || failed(axisAttr) || failed(newAxis))
    return failure();
  if (!*axisAttr)
    return node.fail("attribute 'axis' is required");
  if (*newAxis != 0 && *newAxis != 1)
    return node.fail("attribute 'new_axis' must be 0 or 1");
  if (sequence->empty())
    return node.fail("the sequence is empty: there is nothing to concatenate");
  const int64_t rank = NodeContext::typeOf(sequence->front()).getRank();
  FailureOr<int64_t> axis = node.normalizeAxis(**axisAttr, rank + *newAxis, "axis");
  if (failed(axis))
    return failure();
  if (*newAxis)
    return node.setOutput(stackTensors(node, *sequence, *axis));
  if (sequence->size() == 1)
    return node.setTensorOutput(0, sequence->front());
  return node.setOutput(node.createInferred1<ConcatOp>(
      ValueRange(*sequence), node.builder().getI64IntegerAttr(*axis)));
}

} // namespace shardc::onnx_import
