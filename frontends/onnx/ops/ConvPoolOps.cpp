//===- ConvPoolOps.cpp - Conv, MaxPool, AveragePool and the global pools ----------------===//
//
// The window attributes (kernel_shape, strides, pads, dilations, auto_pad) are read once into
// the dialect's explicit form: auto_pad's SAME_UPPER/SAME_LOWER/VALID become pads, so the ops
// and kernels only ever see explicit pads. A Conv bias becomes an add broadcast over the
// spatial dims, which keeps conv itself bilinear (a simpler gradient and sharding rule).
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/ops/OpImporters.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc::onnx_import {

namespace {

struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
};

// An ints attribute with one entry per spatial dim, or `fill` for each when absent.
FailureOr<SmallVector<int64_t>> perDim(NodeContext &node, StringRef name, size_t count,
                                       int64_t fill) {
  FailureOr<std::optional<SmallVector<int64_t>>> given = node.intsAttr(name);
  if (failed(given))
    return failure();
  if (!*given)
    return SmallVector<int64_t>(count, fill);
  if ((*given)->size() != count)
    return node.fail(name + " has " + std::to_string((*given)->size()) + " entries, expected " +
                     std::to_string(count) + " (one per spatial dim)");
  return **given;
}

// The window of a node over input `x` [N, C, *S]; `kernel` comes from the weight (Conv) or
// the kernel_shape attribute (pools). `withCeilMode`: the op has a ceil_mode attribute.
FailureOr<Window> readWindow(NodeContext &node, RankedTensorType x, ArrayRef<int64_t> kernel,
                             bool withCeilMode) {
  if (x.getRank() < 3 || x.getRank() > 5)
    return node.fail("input X must be [N, C, spatial...] with 1 to 3 spatial dims, got " +
                     formatShape(x.getShape()));
  const size_t spatial = x.getRank() - 2;
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  FailureOr<SmallVector<int64_t>> strides = perDim(node, "strides", spatial, 1);
  FailureOr<SmallVector<int64_t>> dilations = perDim(node, "dilations", spatial, 1);
  FailureOr<std::string> autoPad = node.stringAttr("auto_pad", "NOTSET");
  FailureOr<int64_t> ceil = withCeilMode ? node.intAttr("ceil_mode", 0) : int64_t{0};
  if (failed(strides) || failed(dilations) || failed(autoPad) || failed(ceil))
    return failure();
  w.strides = *strides;
  w.dilations = *dilations;
  w.ceilMode = *ceil != 0;
  for (size_t d = 0; d < spatial; ++d)
    if (w.strides[d] < 1 || w.dilations[d] < 1 || w.kernel[d] < 1)
      return node.fail("kernel sizes, strides and dilations must be positive");
  if (*autoPad == "NOTSET") {
    FailureOr<SmallVector<int64_t>> pads = perDim(node, "pads", 2 * spatial, 0);
    if (failed(pads))
      return failure();
    w.pads = *pads;
    for (int64_t p : w.pads)
      if (p < 0)
        return node.fail("pads must not be negative");
  } else if (*autoPad == "VALID") {
    w.pads.assign(2 * spatial, 0);
  } else if (*autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER") {
    // The output keeps ceil(S / stride) positions; the odd pad goes after (UPPER) or before.
    w.pads.assign(2 * spatial, 0);
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t size = x.getDimSize(d + 2);
      const int64_t out = (size + w.strides[d] - 1) / w.strides[d];
      const int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[d] + w.dilations[d] * (w.kernel[d] - 1) + 1 - size);
      const int64_t small = total / 2, large = total - small;
      w.pads[d] = *autoPad == "SAME_UPPER" ? small : large;
      w.pads[d + spatial] = *autoPad == "SAME_UPPER" ? large : small;
    }
  } else {
    return node.fail("auto_pad '" + *autoPad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, "
                     "VALID");
  }
  return w;
}

// The window of a pool over input `x`: kernel_shape (required) and the window attributes.
FailureOr<Window> readPoolWindow(NodeContext &node, RankedTensorType x) {
  FailureOr<std::optional<SmallVector<int64_t>>> kernel = node.intsAttr("kernel_shape");
  if (failed(kernel))
    return failure();
  if (!*kernel)
    return node.fail("attribute kernel_shape is required");
  if (x.getRank() >= 3 && static_cast<int64_t>((*kernel)->size()) != x.getRank() - 2)
    return node.fail("kernel_shape has " + std::to_string((*kernel)->size()) +
                     " entries for input X " + formatShape(x.getShape()));
  return readWindow(node, x, **kernel, /*withCeilMode=*/true);
}

} // namespace

LogicalResult importConv(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  FailureOr<Value> w = node.requiredInput(1, "W");
  FailureOr<int64_t> group = node.intAttr("group", 1);
  if (failed(x) || failed(w) || failed(group))
    return failure();
  RankedTensorType xType = NodeContext::typeOf(*x), wType = NodeContext::typeOf(*w);
  if (*group < 1)
    return node.fail("group must be positive, got " + std::to_string(*group));
  if (wType.getRank() != xType.getRank())
    return node.fail("weight W " + formatShape(wType.getShape()) + " and input X " +
                     formatShape(xType.getShape()) + " must have the same rank");
  ArrayRef<int64_t> kernel = wType.getShape().drop_front(std::min<int64_t>(2, wType.getRank()));
  // kernel_shape, when given, must agree with the weight.
  FailureOr<std::optional<SmallVector<int64_t>>> declared = node.intsAttr("kernel_shape");
  if (failed(declared))
    return failure();
  if (*declared && ArrayRef<int64_t>(**declared) != kernel)
    return node.fail("kernel_shape does not match the weight W " +
                     formatShape(wType.getShape()));
  FailureOr<Window> window = readWindow(node, xType, kernel, /*withCeilMode=*/false);
  if (failed(window))
    return failure();
  OpBuilder &b = node.builder();
  FailureOr<Value> y = node.createInferred1<ConvOp>(
      *x, *w, b.getDenseI64ArrayAttr(window->strides), b.getDenseI64ArrayAttr(window->pads),
      b.getDenseI64ArrayAttr(window->dilations), b.getI64IntegerAttr(*group));
  if (failed(y) || !node.hasInput(2))
    return node.setOutput(y);
  // The bias [M] broadcast as [M, 1, ...] over the spatial dims.
  Value bias = node.input(2);
  RankedTensorType biasType = NodeContext::typeOf(bias);
  if (biasType.getRank() != 1 || biasType.getDimSize(0) != wType.getDimSize(0))
    return node.fail("bias B " + formatShape(biasType.getShape()) + " must be [" +
                     std::to_string(wType.getDimSize(0)) + "] (one per output channel)");
  SmallVector<int64_t> column(xType.getRank() - 1, 1);
  column[0] = biasType.getDimSize(0);
  FailureOr<Value> reshaped = node.createTyped1<ReshapeOp>(
      RankedTensorType::get(column, biasType.getElementType()), bias);
  if (failed(reshaped))
    return failure();
  return node.setOutput(node.createInferred1<AddOp>(*y, *reshaped));
}

LogicalResult importMaxPool(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  if (failed(x))
    return failure();
  if (node.hasOutput(1))
    return node.fail("the Indices output is not supported");
  // storage_order only orders Indices; it is still checked to be an int.
  if (failed(node.intAttr("storage_order", 0)))
    return failure();
  FailureOr<Window> window = readPoolWindow(node, NodeContext::typeOf(*x));
  if (failed(window))
    return failure();
  OpBuilder &b = node.builder();
  return node.setOutput(node.createInferred1<MaxPoolOp>(
      *x, b.getDenseI64ArrayAttr(window->kernel), b.getDenseI64ArrayAttr(window->strides),
      b.getDenseI64ArrayAttr(window->pads), b.getBoolAttr(window->ceilMode),
      b.getDenseI64ArrayAttr(window->dilations)));
}

LogicalResult importAveragePool(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  FailureOr<int64_t> includePad = node.intAttr("count_include_pad", 0);
  if (failed(x) || failed(includePad))
    return failure();
  FailureOr<Window> window = readPoolWindow(node, NodeContext::typeOf(*x));
  if (failed(window))
    return failure();
  // Opset 19 added dilations; only the undilated window is supported.
  if (llvm::any_of(window->dilations, [](int64_t d) { return d != 1; }))
    return node.fail("dilations other than 1 are not supported");
  OpBuilder &b = node.builder();
  return node.setOutput(node.createInferred1<AvgPoolOp>(
      *x, b.getDenseI64ArrayAttr(window->kernel), b.getDenseI64ArrayAttr(window->strides),
      b.getDenseI64ArrayAttr(window->pads), b.getBoolAttr(window->ceilMode),
      b.getBoolAttr(*includePad != 0)));
}

namespace {
// GlobalAveragePool / GlobalMaxPool: a reduction over every spatial dim, kept as size 1.
template <typename ReduceOpT> LogicalResult importGlobalPool(NodeContext &node) {
  FailureOr<Value> x = node.requiredInput(0, "X");
  if (failed(x))
    return failure();
  RankedTensorType type = NodeContext::typeOf(*x);
  if (type.getRank() < 3)
    return node.fail("input X must be [N, C, spatial...], got " + formatShape(type.getShape()));
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < type.getRank(); ++d)
    axes.push_back(d);
  OpBuilder &b = node.builder();
  return node.setOutput(
      node.createInferred1<ReduceOpT>(*x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true)));
}
} // namespace

LogicalResult importGlobalAveragePool(NodeContext &node) {
  return importGlobalPool<ReduceMeanOp>(node);
}
LogicalResult importGlobalMaxPool(NodeContext &node) { return importGlobalPool<ReduceMaxOp>(node); }

} // namespace shardc::onnx_import
