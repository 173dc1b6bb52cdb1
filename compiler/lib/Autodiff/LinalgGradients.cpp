//===- LinalgGradients.cpp - VJPs of matmul, gemm, layer norm, softmax, attention ----===//
#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

namespace {
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

// v with a unit dimension inserted at `pos` (numpy.matmul's promotion of 1-D operands).
Value promote(OpBuilder &b, Location l, Value v, int64_t pos) {
  SmallVector<int64_t> shape(typeOf(v).getShape());
  shape.insert(shape.begin() + pos, 1);
  return reshapeTo(b, l, v, RankedTensorType::get(shape, typeOf(v).getElementType()));
}
} // namespace

// The weight is frozen: only the input has a gradient, dx = dy · W (or dy · Wᵀ), the same
// dequantizing product the other way round.
LogicalResult QuantizedMatMulOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &g) {
  Value dx = b.create<QuantizedMatMulOp>(gradLoc(*this), dys[0], getCodes(), getScales(),
                                         getFormatAttr(), getRowsAttr(), getColsAttr(),
                                         getUntransposed() ? UnitAttr() : b.getUnitAttr());
  g.push_back(dx);
  g.push_back(Value());
  if (getScales())
    g.push_back(Value());
  return success();
}

LogicalResult MatMulOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  // A transposed operand (shardc-fold-transposes) is differentiated as the product of its
  // transpose, and its gradient transposed back.
  Value a = getTransLhs() ? transposeLastTwo(b, l, getLhs()) : getLhs();
  Value c = getTransRhs() ? transposeLastTwo(b, l, getRhs()) : getRhs();
  Value dy = dys[0];
  // Work on the >= 2-D forms numpy.matmul uses, then undo the promotion.
  bool vecA = typeOf(a).getRank() == 1, vecB = typeOf(c).getRank() == 1;
  Value a2 = vecA ? promote(b, l, a, 0) : a;
  Value b2 = vecB ? promote(b, l, c, 1) : c;
  Value dy2 = dy;
  if (vecA)
    dy2 = promote(b, l, dy2, typeOf(dy2).getRank() - (vecB ? 0 : 1));
  if (vecB)
    dy2 = promote(b, l, dy2, typeOf(dy2).getRank());
  // dA = dY @ B^T and dB = A^T @ dY, summed over broadcast batch dimensions.
  Value da = b.create<MatMulOp>(l, dy2, transposeLastTwo(b, l, b2));
  Value db;
  if (typeOf(a2).getRank() > 2 && typeOf(b2).getRank() == 2) {
    // A batch of rows times one matrix (a linear layer on [batch, seq, in]): the rows of every
    // batch entry form one matrix, so dB is one product over all of them, [K, rows] @ [rows, N],
    // as PyTorch computes it, instead of a [batch, K, N] product summed over the batch after.
    ArrayRef<int64_t> shapeA = typeOf(a2).getShape(), shapeY = typeOf(dy2).getShape();
    int64_t rows = 1;
    for (int64_t d : shapeA.drop_back())
      rows *= d;
    Type f = typeOf(a2).getElementType();
    Value flatA = reshapeTo(b, l, a2, RankedTensorType::get({rows, shapeA.back()}, f));
    Value flatY = reshapeTo(b, l, dy2, RankedTensorType::get({rows, shapeY.back()}, f));
    db = b.create<MatMulOp>(l, transposeLastTwo(b, l, flatA), flatY);
  } else {
    db = b.create<MatMulOp>(l, transposeLastTwo(b, l, a2), dy2);
  }
  Value gradA = reshapeTo(b, l, unbroadcast(b, l, da, typeOf(a2)), typeOf(a));
  Value gradB = reshapeTo(b, l, unbroadcast(b, l, db, typeOf(b2)), typeOf(c));
  g.push_back(getTransLhs() ? transposeLastTwo(b, l, gradA) : gradA);
  g.push_back(getTransRhs() ? transposeLastTwo(b, l, gradB) : gradB);
  return success();
}

LogicalResult GemmOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value dy = dys[0];
  float alpha = getAlpha().convertToFloat(), beta = getBeta().convertToFloat();
  Value scaled = alpha == 1.0f ? dy : Value(b.create<MulOp>(l, dy, scalarF32(b, l, alpha)));
  Value opA = getTransA() ? transposeLastTwo(b, l, getA()) : getA();
  Value opB = getTransB() ? transposeLastTwo(b, l, getB()) : getB();
  // d op(A) = alpha dY op(B)^T, d op(B) = alpha op(A)^T dY; transpose back where transposed.
  Value dOpA = b.create<MatMulOp>(l, scaled, transposeLastTwo(b, l, opB));
  Value dOpB = b.create<MatMulOp>(l, transposeLastTwo(b, l, opA), scaled);
  g.push_back(getTransA() ? transposeLastTwo(b, l, dOpA) : dOpA);
  g.push_back(getTransB() ? transposeLastTwo(b, l, dOpB) : dOpB);
  if (Value c = getC()) {
    Value dc = beta == 1.0f ? dy : Value(b.create<MulOp>(l, dy, scalarF32(b, l, beta)));
    g.push_back(unbroadcast(b, l, dc, typeOf(c)));
  }
  return success();
}

LogicalResult LayerNormOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &g) {
  if (dys[1] || dys[2])
    return emitOpError("gradients through the mean/inv_std_dev outputs are not supported");
  Location l = gradLoc(*this);
  Value scale = getScale();
  auto grads = b.create<LayerNormGradOp>(
      l, TypeRange{getInput().getType(), scale.getType(), scale.getType()}, dys[0], getInput(),
      scale, getMean(), getInvStdDev(), getAxisAttr());
  g.push_back(grads.getDinput());
  g.push_back(grads.getDscale());
  if (Value bias = getBias())
    g.push_back(unbroadcast(b, l, grads.getDbias(), typeOf(bias)));
  return success();
}

// attention: one attention_grad op recomputes the probabilities from lse (nothing of size
// S x Sk was kept). The mask gets no gradient: shardc-fuse-attention fuses only masks that
// depend on no trained parameter.
LogicalResult AttentionOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &g) {
  if (dys[1])
    return emitOpError("gradients through the lse output are not supported");
  auto grads = b.create<AttentionGradOp>(
      gradLoc(*this), TypeRange{getQ().getType(), getK().getType(), getV().getType()}, getQ(),
      getK(), getV(), getMask(), getOutput(), getLse(), dys[0], getScaleAttr(),
      getCausalAttr());
  g.push_back(grads.getDq());
  g.push_back(grads.getDk());
  g.push_back(grads.getDv());
  if (getMask())
    g.push_back(Value());
  return success();
}

LogicalResult SoftmaxOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(b.create<SoftmaxGradOp>(gradLoc(*this), dys[0], getOutput(), getAxisAttr()));
  return success();
}

LogicalResult LogSoftmaxOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &g) {
  g.push_back(b.create<LogSoftmaxGradOp>(gradLoc(*this), dys[0], getOutput(), getAxisAttr()));
  return success();
}

LogicalResult SoftmaxCrossEntropyLossOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                                  SmallVectorImpl<Value> &g) {
  if (dys[1])
    return emitOpError("gradients through the log_prob output are not supported");
  g.push_back(b.create<SoftmaxCrossEntropyLossGradOp>(
      gradLoc(*this), getScores().getType(), dys[0], getLogProb(), getLabels(), getWeights(),
      getReductionAttr(), getIgnoreIndexAttr()));
  g.push_back(Value());
  if (getWeights())
    g.push_back(Value()); // class weights are constants; training them is not supported
  return success();
}

LogicalResult NegativeLogLikelihoodLossOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                                    SmallVectorImpl<Value> &g) {
  g.push_back(b.create<NegativeLogLikelihoodLossGradOp>(
      gradLoc(*this), getInput().getType(), dys[0], getTarget(), getWeight(),
      getReductionAttr(), getIgnoreIndexAttr()));
  g.push_back(Value());
  if (getWeight())
    g.push_back(Value());
  return success();
}

} // namespace shardc::graph
