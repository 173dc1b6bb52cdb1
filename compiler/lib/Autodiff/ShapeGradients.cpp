//===- ShapeGradients.cpp - VJPs of reductions and data movement ------------------------===//
#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

namespace {
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

// dy of a reduction, broadcast back over the reduced axes of `input`.
Value expandReduced(OpBuilder &b, Location l, Value dy, Value input, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(typeOf(input).getShape());
  for (int64_t axis : axes)
    kept[axis] = 1;
  Value shaped = reshapeTo(b, l, dy, RankedTensorType::get(kept, typeOf(dy).getElementType()));
  return b.create<ExpandOp>(l, typeOf(input), shaped);
}
} // namespace

LogicalResult ReduceSumOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &g) {
  g.push_back(expandReduced(b, gradLoc(*this), dys[0], getInput(), getAxes()));
  return success();
}

LogicalResult ReduceMeanOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  int64_t count = 1;
  for (int64_t axis : getAxes())
    count *= typeOf(getInput()).getDimSize(axis);
  Value spread = expandReduced(b, l, dys[0], getInput(), getAxes());
  g.push_back(b.create<DivOp>(l, spread, scalarF32(b, l, static_cast<float>(count))));
  return success();
}

LogicalResult ReduceMaxOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &g) {
  g.push_back(b.create<ReduceMaxGradOp>(gradLoc(*this), getInput().getType(), dys[0],
                                        getInput(), getOutput(), getAxesAttr(),
                                        getKeepdimsAttr()));
  return success();
}

#define GRAPH_RESHAPE_VJP(OP)                                                                  \
  LogicalResult OP::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {   \
    g.push_back(reshapeTo(b, gradLoc(*this), dys[0], typeOf(getInput())));                     \
    return success();                                                                          \
  }
GRAPH_RESHAPE_VJP(ReshapeOp)
GRAPH_RESHAPE_VJP(FlattenOp)
GRAPH_RESHAPE_VJP(SqueezeOp)
GRAPH_RESHAPE_VJP(UnsqueezeOp)
#undef GRAPH_RESHAPE_VJP

LogicalResult TransposeOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &g) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  g.push_back(b.create<TransposeOp>(gradLoc(*this), dys[0], b.getDenseI64ArrayAttr(inverse)));
  return success();
}

LogicalResult ConcatOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  int64_t axis = static_cast<int64_t>(getAxis()), offset = 0;
  auto full = typeOf(getOutput());
  for (Value input : getInputs()) {
    int64_t size = typeOf(input).getDimSize(axis);
    SmallVector<int64_t> starts(full.getRank(), 0), ends(full.getShape()), steps(full.getRank(), 1);
    starts[axis] = offset;
    ends[axis] = offset + size;
    offset += size;
    if (!isDifferentiable(input)) {
      g.push_back(Value());
      continue;
    }
    g.push_back(b.create<SliceOp>(l, dys[0], b.getDenseI64ArrayAttr(starts),
                                  b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps)));
  }
  return success();
}

LogicalResult SplitOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  SmallVector<Value> parts;
  for (auto [dy, result] : llvm::zip(dys, getOutputs()))
    parts.push_back(dy ? dy : zerosOf(b, l, typeOf(result)));
  g.push_back(b.create<ConcatOp>(l, parts, getAxisAttr()));
  return success();
}

// The elements of x sit in y at the pads' offsets: dx is dy with the pads undone (negated: a
// pad becomes a crop and a crop a pad of zeros).
LogicalResult PadOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  SmallVector<int64_t> undo;
  for (int64_t p : getPads())
    undo.push_back(-p);
  g.push_back(b.create<PadOp>(gradLoc(*this), getInput().getType(), dys[0],
                              b.getDenseI64ArrayAttr(undo), b.getF64FloatAttr(0.0)));
  return success();
}

LogicalResult SliceOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(b.create<SliceGradOp>(gradLoc(*this), getInput().getType(), dys[0],
                                    getStartsAttr(), getStepsAttr()));
  return success();
}

// The gathered rows' gradients are scattered back (summed where an index repeats). An
// embedding's padding row gets none: the rows of dy that picked it are zeroed first (dy times
// indices != padding_idx, broadcast over the data's other dims).
LogicalResult GatherOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  if (!isDifferentiable(getData())) {
    g.append({Value(), Value()});
    return success();
  }
  Location loc = gradLoc(*this);
  Value dy = dys[0];
  if (std::optional<uint64_t> pad = getPaddingIdx()) {
    auto indices = cast<RankedTensorType>(getIndices().getType());
    auto dyType = cast<RankedTensorType>(dy.getType());
    auto scalar = RankedTensorType::get({}, indices.getElementType());
    Value padding = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(scalar, b.getIntegerAttr(indices.getElementType(),
                                                             static_cast<int64_t>(*pad))));
    auto bools = RankedTensorType::get(indices.getShape(), b.getI1Type());
    Value kept = b.create<NotOp>(loc, bools,
                                 b.create<EqualOp>(loc, bools, getIndices(), padding));
    // [1] * axis + indices' shape + [1] * (the data's dims after the axis).
    SmallVector<int64_t> shape(getAxis(), 1);
    shape.append(indices.getShape().begin(), indices.getShape().end());
    shape.resize(dyType.getRank(), 1);
    auto maskType = RankedTensorType::get(shape, dyType.getElementType());
    Value mask = b.create<ReshapeOp>(
        loc, maskType, b.create<CastOp>(loc, kept, TypeAttr::get(dyType.getElementType())));
    dy = b.create<MulOp>(loc, dyType, dy, mask);
  }
  g.push_back(b.create<GatherGradOp>(loc, getData().getType(), dy, getIndices(), getAxisAttr()));
  g.push_back(Value());
  return success();
}

LogicalResult ExpandOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(unbroadcast(b, gradLoc(*this), dys[0], typeOf(getInput())));
  return success();
}

// A cumulative sum's adjoint sums dy the other way along the axis (each input reaches every
// later output, or every earlier one when reversed); exclusive stays exclusive.
LogicalResult CumSumOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(b.create<CumSumOp>(gradLoc(*this), dys[0], getAxisAttr(), getExclusiveAttr(),
                                 b.getBoolAttr(!getReverse())));
  return success();
}

// ScatterND whose indices address rows of dim 0 (indices [..., 1]: ScatterElements on the
// flattened data, `x[idx] = v` along dim 0). "none" overwrites: data's gradient is dy with the
// written rows zeroed (a scatter of zeros), the updates' is dy at those rows (a gather).
// "add" passes dy to data whole. Other reductions, and indices addressing more dims, are
// refused rather than approximated. (An index written twice keeps one update, in an order ONNX
// leaves open; PyTorch's scatter leaves it open too.)
LogicalResult ScatterNDOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &g) {
  auto indices = cast<RankedTensorType>(getIndices().getType());
  const StringRef reduction = getReduction();
  if (indices.getRank() < 1 || indices.getShape().back() != 1 ||
      (reduction != "none" && reduction != "add"))
    return emitOpError("the gradient through scatter_nd is supported for indices addressing "
                       "dim 0 ([..., 1]) with reduction none or add, not indices ")
           << indices << " with reduction '" << reduction << "'";
  Location loc = gradLoc(*this);
  Value dy = dys[0];
  Value dData;
  if (isDifferentiable(getData())) {
    if (reduction == "add") {
      dData = dy;
    } else {
      auto updates = cast<RankedTensorType>(getUpdates().getType());
      Value zeros = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(updates, b.getZeroAttr(updates.getElementType())));
      dData = b.create<ScatterNDOp>(loc, dy.getType(), dy, getIndices(), zeros,
                                    b.getStringAttr("none"));
    }
  }
  Value dUpdates;
  if (isDifferentiable(getUpdates())) {
    auto rows = RankedTensorType::get(indices.getShape().drop_back(), indices.getElementType());
    Value at = b.create<ReshapeOp>(loc, rows, getIndices());
    dUpdates = b.create<GatherOp>(loc, getUpdates().getType(), dy, at, b.getI64IntegerAttr(0),
                                  IntegerAttr());
  }
  g.append({dData, Value(), dUpdates});
  return success();
}

LogicalResult TriluOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(b.create<TriluOp>(gradLoc(*this), dys[0], getUpperAttr(), getKAttr()));
  return success();
}

} // namespace shardc::graph
