//===- GradientUtils.cpp ----------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GradientUtils.h"

#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

Location gradLoc(Operation *op) { return suffixedLoc(op->getLoc(), "/grad"); }

bool isDifferentiable(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  // bf16 and f16 values only come from casts (the precision passes), whose rule casts the
  // gradient back.
  return t && (t.getElementType().isF32() || t.getElementType().isBF16() ||
               t.getElementType().isF16());
}

Value scalarF32(OpBuilder &b, Location loc, float value) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, value));
}

Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type) {
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  Value zero = b.create<ConstantOp>(loc, DenseElementsAttr::get(scalarType, b.getZeroAttr(type.getElementType())));
  if (type.getRank() == 0)
    return zero;
  return b.create<ExpandOp>(loc, type, zero);
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return b.create<ReshapeOp>(loc, type, v);
}

Value unbroadcast(OpBuilder &b, Location loc, Value grad, RankedTensorType target) {
  auto type = cast<RankedTensorType>(grad.getType());
  if (type.getShape() == target.getShape())
    return grad;
  int64_t lead = type.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d < lead || (target.getDimSize(d - lead) == 1 && type.getDimSize(d) != 1))
      axes.push_back(d);
  Value summed = grad;
  if (!axes.empty())
    summed = b.create<ReduceSumOp>(loc, grad, b.getDenseI64ArrayAttr(axes),
                                   b.getBoolAttr(true));
  return reshapeTo(b, loc, summed, target);
}

Value transposeLastTwo(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < type.getRank(); ++d)
    perm.push_back(d);
  std::swap(perm[type.getRank() - 1], perm[type.getRank() - 2]);
  return b.create<TransposeOp>(loc, v, b.getDenseI64ArrayAttr(perm));
}

} // namespace shardc::graph
