//===- ShapeOps.cpp - Reshape, Unsqueeze, Squeeze, Flatten, Expand, Shape, -------------===//
//                    ConstantOfShape, Range
//
// These ops' result shapes come from attributes or from the *values* of compile-time inputs;
// the importer computes them (with ONNX's special values) and gives the op its static
// result type, which the dialect verifies.
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/ops/OpImporters.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/ImportLimits.h"
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/TensorDecoding.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"
#include "shardc/Lowering/ConstantEvaluator.h"

#include <cmath>

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

RankedTensorType withShape(Value v, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, NodeContext::typeOf(v).getElementType());
}

// Fails unless `shape` is a valid static shape (no negative dims, within the limits).
LogicalResult checkShape(NodeContext &node, ArrayRef<int64_t> shape, llvm::StringRef what) {
  std::string why;
  if (checkedElementCount(shape, why))
    return success();
  return node.fail(what + " " + formatShape(shape) + " is invalid: " + why);
}

// Reshape's target: 0 copies the input dimension (unless allowzero), -1 is inferred.
FailureOr<SmallVector<int64_t>> reshapeTarget(NodeContext &node, ArrayRef<int64_t> input,
                                              ArrayRef<int64_t> shape, bool allowZero) {
  SmallVector<int64_t> out;
  std::optional<size_t> inferred;
  bool hasZero = false;
  for (auto [i, s] : llvm::enumerate(shape)) {
    if (s == -1) {
      if (inferred)
        return node.fail("shape has more than one -1");
      inferred = i;
      out.push_back(1);
    } else if (s == 0 && !allowZero) {
      if (i >= input.size())
        return node.fail("shape[" + std::to_string(i) +
                         "] is 0 (copy the input dimension) "
                         "but the input has rank " +
                         std::to_string(input.size()));
      out.push_back(input[i]);
    } else if (s < 0) {
      return node.fail("shape value " + std::to_string(s) + " is invalid");
    } else {
      hasZero |= s == 0;
      out.push_back(s);
    }
  }
  if (inferred && hasZero)
    return node.fail("shape has both -1 and 0 with allowzero=1");
  std::string why;
  std::optional<int64_t> known = checkedElementCount(out, why);
  if (!known)
    return node.fail("shape " + formatShape(out) + " is invalid: " + why);
  int64_t total = numElements(input);
  if (inferred) {
    if (*known == 0 || total % *known != 0)
      return node.fail("cannot reshape " + formatShape(input) + " (" + std::to_string(total) +
                       " elements) with -1 in shape " + formatShape(shape));
    out[*inferred] = total / *known;
  } else if (*known != total) {
    return node.fail("cannot reshape " + formatShape(input) + " (" + std::to_string(total) +
                     " elements) to " + formatShape(out) + " (" + std::to_string(*known) +
                     " elements)");
  }
  return out;
}

// Range's element count, max(ceil((limit - start) / delta), 0), in the inputs' type.
FailureOr<int64_t> rangeCount(NodeContext &node, DenseElementsAttr start, DenseElementsAttr limit,
                              DenseElementsAttr delta) {
  if (start.getElementType().isF32()) {
    float s = start.getValues<float>()[0], l = limit.getValues<float>()[0],
          d = delta.getValues<float>()[0];
    // As onnxruntime: the difference in the input type, the division in double.
    double n = std::ceil(static_cast<double>(l - s) / static_cast<double>(d));
    if (d == 0.0f || !std::isfinite(n))
      return node.fail("start, limit and delta give no finite element count");
    return n <= 0 ? int64_t(0) : n > double(kMaxElements) ? kMaxElements + 1 : int64_t(n);
  }
  __int128 s = start.getValues<APInt>()[0].getSExtValue();
  __int128 l = limit.getValues<APInt>()[0].getSExtValue();
  __int128 d = delta.getValues<APInt>()[0].getSExtValue();
  if (d == 0)
    return node.fail("delta must not be 0");
  __int128 diff = l - s;
  if ((diff > 0) != (d > 0) || diff == 0)
    return int64_t(0);
  __int128 n = d > 0 ? (diff + d - 1) / d : (diff + d + 1) / d;
  return n > kMaxElements ? kMaxElements + 1 : static_cast<int64_t>(n);
}

} // namespace

LogicalResult importReshape(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  FailureOr<int64_t> allowZero = node.intAttr("allowzero", 0);
  if (failed(x) || failed(allowZero))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = node.constantInts(1, "shape", kMaxRank);
  if (failed(shape))
    return failure();
  FailureOr<SmallVector<int64_t>> target =
      reshapeTarget(node, NodeContext::typeOf(*x).getShape(), *shape, *allowZero != 0);
  if (failed(target))
    return failure();
  return node.setOutput(node.createTyped1<ReshapeOp>(withShape(*x, *target), *x));
}

// Opset 13+: axes is an input; they index the *output* dimensions.
LogicalResult importUnsqueeze(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<int64_t>> axes = node.constantInts(1, "axes", kMaxRank);
  if (failed(axes))
    return failure();
  ArrayRef<int64_t> in = NodeContext::typeOf(*x).getShape();
  int64_t outRank = static_cast<int64_t>(in.size() + axes->size());
  FailureOr<SmallVector<int64_t>> normalized = node.normalizeAxes(*axes, outRank, "axis");
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> out;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    out.push_back(llvm::is_contained(*normalized, d) ? 1 : in[next++]);
  return node.setOutput(node.createTyped1<UnsqueezeOp>(withShape(*x, out), *x));
}

// Without axes every dimension of size 1 is removed.
LogicalResult importSqueeze(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = NodeContext::typeOf(*x).getShape();
  SmallVector<int64_t> squeezed;
  if (node.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> axes = node.constantInts(1, "axes", kMaxRank);
    if (failed(axes))
      return failure();
    FailureOr<SmallVector<int64_t>> normalized =
        node.normalizeAxes(*axes, static_cast<int64_t>(in.size()), "axis");
    if (failed(normalized))
      return failure();
    for (int64_t d : *normalized)
      if (in[d] != 1)
        return node.fail("cannot squeeze dimension " + std::to_string(d) + " of size " +
                         std::to_string(in[d]));
    squeezed = *normalized;
  } else {
    for (auto [d, size] : llvm::enumerate(in))
      if (size == 1)
        squeezed.push_back(d);
  }
  SmallVector<int64_t> out;
  for (auto [d, size] : llvm::enumerate(in))
    if (!llvm::is_contained(squeezed, static_cast<int64_t>(d)))
      out.push_back(size);
  return node.setOutput(node.createTyped1<SqueezeOp>(withShape(*x, out), *x));
}

// axis in [-rank, rank]: [prod(dims[:axis]), prod(dims[axis:])].
LogicalResult importFlatten(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  FailureOr<int64_t> axis = node.intAttr("axis", 1);
  if (failed(x) || failed(axis))
    return failure();
  ArrayRef<int64_t> in = NodeContext::typeOf(*x).getShape();
  int64_t rank = static_cast<int64_t>(in.size());
  if (*axis < -rank || *axis > rank)
    return node.fail("axis " + std::to_string(*axis) + " is out of range for rank " +
                     std::to_string(rank));
  int64_t split = *axis < 0 ? *axis + rank : *axis;
  int64_t out[2] = {numElements(in.take_front(split)), numElements(in.drop_front(split))};
  return node.setOutput(node.createTyped1<FlattenOp>(withShape(*x, out), *x));
}

// The result is the bidirectional broadcast of the input shape and `shape`.
LogicalResult importExpand(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = node.constantInts(1, "shape", kMaxRank);
  if (failed(shape) || failed(checkShape(node, *shape, "shape")))
    return failure();
  std::string why;
  std::optional<Shape> out = broadcastShapes(NodeContext::typeOf(*x).getShape(), *shape, why);
  if (!out)
    return node.fail(why);
  return node.setOutput(node.createTyped1<ExpandOp>(withShape(*x, *out), *x));
}

// Tile as Reshape -> Expand -> Reshape: each repeated dimension d gets a new dimension of size 1
// in front of it, which Expand broadcasts to the repeat count r, and the pair merges into r * d
// (repeat-major: whole copies one after another, as Tile lays them out). Gradients and sharding
// rules are then those of the three ops. `repeats` must be known at compile time.
LogicalResult importTile(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<int64_t>> repeats = node.constantInts(1, "repeats", kMaxRank);
  if (failed(repeats))
    return failure();
  ArrayRef<int64_t> in = NodeContext::typeOf(*x).getShape();
  if (repeats->size() != in.size())
    return node.fail("repeats has " + std::to_string(repeats->size()) +
                     " values but the input has rank " + std::to_string(in.size()));
  SmallVector<int64_t> split, expanded;
  for (auto [d, r] : llvm::zip(in, *repeats)) {
    if (r < 1)
      return node.fail("repeats must be at least 1 (an empty result is not supported), got " +
                       std::to_string(r));
    if (r > 1) {
      split.push_back(1);
      expanded.push_back(r);
    }
    split.push_back(d);
    expanded.push_back(d);
  }
  if (split.size() == in.size())
    return node.setOutput(node.createTyped1<IdentityOp>(x->getType(), *x));
  if (failed(checkShape(node, expanded, "the tiled shape")))
    return failure();
  SmallVector<int64_t> out;
  for (auto [d, r] : llvm::zip(in, *repeats))
    out.push_back(d * r);
  FailureOr<Value> unit = node.createTyped1<ReshapeOp>(withShape(*x, split), *x);
  if (failed(unit))
    return failure();
  FailureOr<Value> copies = node.createTyped1<ExpandOp>(withShape(*x, expanded), *unit);
  if (failed(copies))
    return failure();
  return node.setOutput(node.createTyped1<ReshapeOp>(withShape(*x, out), *copies));
}

// Opset 15's start/end are clamped to [0, rank] after adding rank to negative values;
// start > end gives an empty result.
LogicalResult importShape(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "data");
  FailureOr<int64_t> start = node.intAttr("start", 0);
  FailureOr<std::optional<int64_t>> end = node.optionalIntAttr("end");
  if (failed(x) || failed(start) || failed(end))
    return failure();
  int64_t rank = NodeContext::typeOf(*x).getRank();
  auto clamp = [rank](int64_t v) {
    if (v < 0)
      v = v < -rank ? 0 : v + rank;
    return std::min(v, rank);
  };
  int64_t first = clamp(*start);
  int64_t last = std::max(first, end->has_value() ? clamp(**end) : rank);
  OpBuilder &builder = node.builder();
  return node.setOutput(node.createInferred1<graph::ShapeOp>(*x, builder.getI64IntegerAttr(first),
                                                             builder.getI64IntegerAttr(last)));
}

// `value` (a one-element tensor, default float32 0) gives the element type.
LogicalResult importConstantOfShape(NodeContext &node) {
  FailureOr<Value> shapeInput = node.requiredInput(0, "input");
  if (failed(shapeInput))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = node.constantInts(0, "input", kMaxRank);
  if (failed(shape) || failed(checkShape(node, *shape, "shape")))
    return failure();
  DenseElementsAttr value =
      DenseElementsAttr::get(RankedTensorType::get({1}, Float32Type::get(node.context())), 0.0f);
  if (const onnx::AttributeProto *attr = node.findAttr("value")) {
    if (!attr->has_t())
      return node.fail("attribute 'value' must be a tensor");
    DecodedTensor decoded;
    std::string why;
    if (failed(decodeTensor(*node.context(), attr->t(), "", decoded, why)))
      return node.fail("attribute 'value': " + why);
    if (!decoded.present || decoded.type.getNumElements() != 1)
      return node.fail("attribute 'value' must hold exactly one value");
    value = toElementsAttr(decoded);
  }
  auto type = RankedTensorType::get(*shape, value.getElementType());
  return node.setOutput(node.createTyped1<ConstantOfShapeOp>(type, *shapeInput, value));
}

LogicalResult importRange(NodeContext &node) {
  DenseElementsAttr values[3];
  const char *names[3] = {"start", "limit", "delta"};
  for (unsigned i = 0; i < 3; ++i) {
    FailureOr<DenseElementsAttr> v = node.constantInput(i, names[i]);
    if (failed(v))
      return failure();
    auto type = cast<RankedTensorType>(v->getType());
    if (type.getRank() != 0)
      return node.fail("input '" + std::string(names[i]) + "' must be a scalar, got " +
                       describeType(type));
    if (type.getElementType().isInteger(1))
      return node.fail("Range is not defined for bool");
    if (i > 0 && type.getElementType() != values[0].getElementType())
      return node.fail("start, limit and delta must have the same element type");
    values[i] = *v;
  }
  FailureOr<int64_t> count = rangeCount(node, values[0], values[1], values[2]);
  if (failed(count))
    return failure();
  Type element = values[0].getElementType();
  // graph.range always folds (its inputs are constant); its folder materialises every element.
  if (*count * elementByteSize(element) > kMaxFoldedConstantBytes)
    return node.fail("Range of " + std::to_string(*count) +
                     " elements is larger than shardc "
                     "evaluates at compile time (" +
                     std::to_string(kMaxFoldedConstantBytes >> 20) + " MiB)");
  return node.setOutput(node.createTyped1<RangeOp>(RankedTensorType::get({*count}, element),
                                                   node.input(0), node.input(1), node.input(2)));
}

// EyeLike (torch.eye in an export, SigLIP's labels): ones where column - row == k on the
// input's [n, m] shape, as Equal(row, column - k) of two small constants cast to the element
// type, so that the [n, m] result is computed (or folded) like any elementwise op.
LogicalResult importEyeLike(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "input");
  FailureOr<int64_t> k = node.intAttr("k", 0);
  FailureOr<std::optional<int64_t>> dtype = node.optionalIntAttr("dtype");
  if (failed(x) || failed(k) || failed(dtype))
    return failure();
  RankedTensorType type = NodeContext::typeOf(*x);
  if (type.getRank() != 2)
    return node.fail("input must be 2-D, got " + describeType(type));
  Type element = type.getElementType();
  if (*dtype) {
    element = elementTypeFor(*node.context(), **dtype);
    if (!element)
      return node.fail("dtype " + onnxTypeName(**dtype) +
                       " is not supported (shardc supports float32, int64, int32, bool)");
  }
  const int64_t n = type.getDimSize(0), m = type.getDimSize(1);
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type();
  SmallVector<int64_t> rows(n), cols(m);
  for (int64_t i = 0; i < n; ++i)
    rows[i] = i;
  for (int64_t j = 0; j < m; ++j)
    cols[j] = j - *k;
  Value row = node.constant(DenseElementsAttr::get(RankedTensorType::get({n, 1}, i64),
                                                   ArrayRef<int64_t>(rows)));
  Value col = node.constant(DenseElementsAttr::get(RankedTensorType::get({1, m}, i64),
                                                   ArrayRef<int64_t>(cols)));
  FailureOr<Value> diagonal = node.createInferred1<EqualOp>(row, col);
  if (failed(diagonal) || element.isInteger(1))
    return failed(diagonal) ? failure() : node.setOutput(*diagonal);
  return node.setOutput(node.createInferred1<CastOp>(*diagonal, TypeAttr::get(element)));
}

} // namespace shardc::onnx_import
