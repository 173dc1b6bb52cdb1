//===- ConvPoolOps.cpp - result shapes of conv and pooling ------------------------------===//
//
// The window arithmetic is ShapeRules' windowOutputShape, shared with the importer (which
// resolves auto_pad with it) so that both agree on every output extent.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"

using namespace mlir;
using namespace shardc::graph;

namespace {
RankedTensorType rankedType(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

LogicalResult inferPool(std::optional<Location> loc, Value input, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                        ArrayRef<int64_t> dilations, bool ceilMode,
                        SmallVectorImpl<Type> &out) {
  auto x = rankedType(input);
  if (!x)
    return emitOptionalError(loc, "input must be a ranked tensor");
  std::string why;
  std::optional<Shape> shape = windowOutputShape(
      x.getShape(), x.getRank() >= 2 ? x.getDimSize(1) : 0,
      WindowGeometry{kernel, strides, pads, dilations, ceilMode}, why);
  if (!shape)
    return emitOptionalError(loc, why);
  out.push_back(RankedTensorType::get(*shape, x.getElementType()));
  return success();
}
} // namespace

LogicalResult ConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  if (!x || !w)
    return emitOptionalError(loc, "operands must be ranked tensors");
  const int64_t group = adaptor.getGroup();
  if (w.getRank() != x.getRank() || x.getRank() < 3)
    return emitOptionalError(loc, "weight ", formatShape(w.getShape()),
                             " must be [M, C/group, kernel...] of input ",
                             formatShape(x.getShape()), "'s rank (3 to 5)");
  const int64_t channels = x.getDimSize(1), maps = w.getDimSize(0);
  if (channels % group != 0 || maps % group != 0 || w.getDimSize(1) * group != channels)
    return emitOptionalError(loc, "group ", group, ": input channels ", channels,
                             " and weight ", formatShape(w.getShape()),
                             " do not split into that many groups");
  ArrayRef<int64_t> kernel = w.getShape().drop_front(2);
  std::string why;
  std::optional<Shape> shape = windowOutputShape(
      x.getShape(), maps,
      WindowGeometry{kernel, adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations()},
      why);
  if (!shape)
    return emitOptionalError(loc, why);
  out.push_back(RankedTensorType::get(*shape, x.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &out) {
  return inferPool(loc, adaptor.getInput(), adaptor.getKernelShape(), adaptor.getStrides(),
                   adaptor.getPads(), adaptor.getDilations(), adaptor.getCeilMode(), out);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &out) {
  SmallVector<int64_t> ones(adaptor.getKernelShape().size(), 1);
  return inferPool(loc, adaptor.getInput(), adaptor.getKernelShape(), adaptor.getStrides(),
                   adaptor.getPads(), ones, adaptor.getCeilMode(), out);
}
