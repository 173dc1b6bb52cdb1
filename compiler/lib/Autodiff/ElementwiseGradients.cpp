//===- ElementwiseGradients.cpp - VJPs of the elementwise ops ---------------------------===//
//
// Formulas follow PyTorch's derivatives (tools/autograd/derivatives.yaml), so a model trained
// here takes the same steps as in PyTorch up to float reassociation; where PyTorch splits a
// gradient between tied inputs (max/min) or picks a subgradient (abs/relu at 0), so do we.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include <cmath>

using namespace mlir;

namespace shardc::graph {

namespace {
Value mul(OpBuilder &b, Location l, Value x, Value y) { return b.create<MulOp>(l, x, y); }
Value div(OpBuilder &b, Location l, Value x, Value y) { return b.create<DivOp>(l, x, y); }
Value sub(OpBuilder &b, Location l, Value x, Value y) { return b.create<SubOp>(l, x, y); }
Value neg(OpBuilder &b, Location l, Value x) { return b.create<NegOp>(l, x); }
Value where(OpBuilder &b, Location l, Value c, Value x, Value y) {
  return b.create<WhereOp>(l, c, x, y);
}
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

// Gradient for each operand of a binary op from the broadcast-shaped `da`, `db` (null: none).
LogicalResult binaryGrads(OpBuilder &b, Location l, Value lhs, Value rhs, Value da, Value db,
                          SmallVectorImpl<Value> &grads) {
  grads.push_back(da && isDifferentiable(lhs) ? unbroadcast(b, l, da, typeOf(lhs)) : Value());
  grads.push_back(db && isDifferentiable(rhs) ? unbroadcast(b, l, db, typeOf(rhs)) : Value());
  return success();
}
} // namespace

// Ops whose results are integers or bools never receive a gradient.
#define GRAPH_NO_GRADIENT(OP)                                                                  \
  LogicalResult OP::buildVjp(OpBuilder &, ArrayRef<Value>, SmallVectorImpl<Value> &grads) {    \
    grads.assign((*this)->getNumOperands(), Value());                                          \
    return success();                                                                          \
  }
GRAPH_NO_GRADIENT(NotOp)
GRAPH_NO_GRADIENT(EqualOp)
GRAPH_NO_GRADIENT(LessOp)
GRAPH_NO_GRADIENT(GreaterOp)
GRAPH_NO_GRADIENT(AndOp)
GRAPH_NO_GRADIENT(OrOp)
#undef GRAPH_NO_GRADIENT

LogicalResult NegOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(neg(b, gradLoc(*this), dys[0]));
  return success();
}

LogicalResult IdentityOp::buildVjp(OpBuilder &, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &g) {
  g.push_back(dys[0]);
  return success();
}

// Training dropout: y = x * (mask ? 1/(1-ratio) : 0), so dx = mask ? dy/(1-ratio) : 0, reusing
// the forward's mask (the key operands have no gradient). Inference dropout is the identity.
LogicalResult DropoutOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.assign((*this)->getNumOperands(), Value());
  if (!dys[0])
    return success();
  if (!isRandom()) {
    g[0] = dys[0];
    return success();
  }
  Location l = gradLoc(*this);
  float scale = 1.0f / (1.0f - getRatio().convertToFloat());
  g[0] = where(b, l, getMask(), mul(b, l, dys[0], scalarF32(b, l, scale)), scalarF32(b, l, 0.0f));
  return success();
}

LogicalResult AbsOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value x = getInput(), zero = scalarF32(b, l, 0.0f);
  // sign(x), with sign(0) = 0 as in PyTorch.
  Value sign = where(b, l, b.create<GreaterOp>(l, x, zero), scalarF32(b, l, 1.0f),
                     where(b, l, b.create<LessOp>(l, x, zero), scalarF32(b, l, -1.0f), zero));
  g.push_back(mul(b, l, dys[0], sign));
  return success();
}

LogicalResult ReluOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value zero = scalarF32(b, l, 0.0f);
  g.push_back(where(b, l, b.create<GreaterOp>(l, getOutput(), zero), dys[0], zero));
  return success();
}

LogicalResult SqrtOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  g.push_back(div(b, l, dys[0], mul(b, l, getOutput(), scalarF32(b, l, 2.0f))));
  return success();
}

LogicalResult ReciprocalOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  g.push_back(mul(b, l, neg(b, l, dys[0]), mul(b, l, getOutput(), getOutput())));
  return success();
}

LogicalResult ExpOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(mul(b, gradLoc(*this), dys[0], getOutput()));
  return success();
}

LogicalResult LogOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(div(b, gradLoc(*this), dys[0], getInput()));
  return success();
}

LogicalResult TanhOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value y = getOutput();
  g.push_back(mul(b, l, dys[0], sub(b, l, scalarF32(b, l, 1.0f), mul(b, l, y, y))));
  return success();
}

LogicalResult SigmoidOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value y = getOutput();
  g.push_back(mul(b, l, mul(b, l, dys[0], sub(b, l, scalarF32(b, l, 1.0f), y)), y));
  return success();
}

// d softplus(x) = sigmoid(x) dx.
LogicalResult SoftplusOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  g.push_back(mul(b, l, dys[0], b.create<SigmoidOp>(l, getInput())));
  return success();
}

LogicalResult ErfOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value x = getInput();
  Value e = b.create<ExpOp>(l, neg(b, l, mul(b, l, x, x)));
  g.push_back(mul(b, l, mul(b, l, scalarF32(b, l, static_cast<float>(2.0 / std::sqrt(M_PI))), e),
                  dys[0]));
  return success();
}

// d sin(x) = cos(x) dx; d cos(x) = -sin(x) dx (rotary embeddings' tables, when computed in the
// graph from trained inputs).
LogicalResult SinOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  g.push_back(mul(b, l, dys[0], b.create<CosOp>(l, getInput())));
  return success();
}

LogicalResult CosOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  g.push_back(mul(b, l, dys[0], neg(b, l, b.create<SinOp>(l, getInput()))));
  return success();
}

LogicalResult GeluOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  g.push_back(b.create<GeluGradOp>(gradLoc(*this), dys[0], getInput(), getApproximateAttr()));
  return success();
}

LogicalResult AddOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  return binaryGrads(b, gradLoc(*this), getLhs(), getRhs(), dys[0], dys[0], g);
}

LogicalResult SubOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value db = isDifferentiable(getRhs()) ? neg(b, l, dys[0]) : Value();
  return binaryGrads(b, l, getLhs(), getRhs(), dys[0], db, g);
}

LogicalResult MulOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value da = isDifferentiable(getLhs()) ? mul(b, l, dys[0], getRhs()) : Value();
  Value db = isDifferentiable(getRhs()) ? mul(b, l, dys[0], getLhs()) : Value();
  return binaryGrads(b, l, getLhs(), getRhs(), da, db, g);
}

LogicalResult DivOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value a = getLhs(), c = getRhs();
  Value da = isDifferentiable(a) ? div(b, l, dys[0], c) : Value();
  // PyTorch: -grad * self / (other * other).
  Value db = isDifferentiable(c) ? div(b, l, mul(b, l, neg(b, l, dys[0]), a), mul(b, l, c, c))
                                 : Value();
  return binaryGrads(b, l, a, c, da, db, g);
}

// Floats have only fmod (the verifier): y = a - trunc(a / b) * b. PyTorch's fmod backward:
// grad for a, -grad * trunc(a / b) for b; trunc(a / b) is (a - y) / b, which is an integer
// up to the rounding of the subtraction and division.
LogicalResult ModOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value a = getLhs(), c = getRhs();
  Value da = isDifferentiable(a) ? dys[0] : Value();
  Value db = isDifferentiable(c)
                 ? mul(b, l, neg(b, l, dys[0]), div(b, l, sub(b, l, a, getOutput()), c))
                 : Value();
  return binaryGrads(b, l, a, c, da, db, g);
}

LogicalResult PowOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value base = getLhs(), exponent = getRhs(), dy = dys[0];
  Value zero = scalarF32(b, l, 0.0f);
  Value da, db;
  if (isDifferentiable(base)) {
    // PyTorch pow_backward_self: where(exponent == 0, 0, grad * exponent * pow(self, exponent - 1)).
    Value e = exponent;
    if (!isDifferentiable(e))
      e = b.create<CastOp>(l, e, TypeAttr::get(b.getF32Type()));
    Value p = b.create<PowOp>(l, base, sub(b, l, e, scalarF32(b, l, 1.0f)));
    da = where(b, l, b.create<EqualOp>(l, e, zero), zero, mul(b, l, mul(b, l, dy, e), p));
  }
  if (isDifferentiable(exponent) && isDifferentiable(base)) {
    // PyTorch pow_backward_exponent: where(self == 0 & exponent >= 0, 0, grad * result * log(self)).
    Value cond = b.create<AndOp>(l, b.create<EqualOp>(l, base, zero),
                                 b.create<OrOp>(l, b.create<GreaterOp>(l, exponent, zero),
                                                b.create<EqualOp>(l, exponent, zero)));
    Value term = mul(b, l, mul(b, l, dy, getOutput()), b.create<LogOp>(l, base));
    db = where(b, l, cond, zero, term);
  } else if (isDifferentiable(exponent)) {
    return emitOpError("gradient w.r.t. a float exponent of an integer base is not supported");
  }
  return binaryGrads(b, l, base, exponent, da, db, g);
}

// PyTorch's maximum/minimum backward: the winner gets the gradient, ties split it in half.
static LogicalResult extremumGrads(Operation *op, OpBuilder &b, Value lhs, Value rhs, Value dy,
                                   bool isMax, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(op);
  Value half = scalarF32(b, l, 0.5f), one = scalarF32(b, l, 1.0f), zero = scalarF32(b, l, 0.0f);
  Value tie = b.create<EqualOp>(l, lhs, rhs);
  Value lhsWins = isMax ? Value(b.create<GreaterOp>(l, lhs, rhs)) : Value(b.create<LessOp>(l, lhs, rhs));
  Value rhsWins = isMax ? Value(b.create<LessOp>(l, lhs, rhs)) : Value(b.create<GreaterOp>(l, lhs, rhs));
  Value wa = where(b, l, tie, half, where(b, l, lhsWins, one, zero));
  Value wb = where(b, l, tie, half, where(b, l, rhsWins, one, zero));
  return binaryGrads(b, l, lhs, rhs, mul(b, l, dy, wa), mul(b, l, dy, wb), g);
}

LogicalResult MaxOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  return extremumGrads(*this, b, getLhs(), getRhs(), dys[0], /*isMax=*/true, g);
}

LogicalResult MinOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  return extremumGrads(*this, b, getLhs(), getRhs(), dys[0], /*isMax=*/false, g);
}

LogicalResult WhereOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value zero = scalarF32(b, l, 0.0f);
  g.push_back(Value());
  g.push_back(isDifferentiable(getX())
                  ? unbroadcast(b, l, where(b, l, getCondition(), dys[0], zero), typeOf(getX()))
                  : Value());
  g.push_back(isDifferentiable(getY())
                  ? unbroadcast(b, l, where(b, l, getCondition(), zero, dys[0]), typeOf(getY()))
                  : Value());
  return success();
}

LogicalResult ClipOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  Value x = getInput(), lo = getMin(), hi = getMax(), zero = scalarF32(b, l, 0.0f);
  // PyTorch clamp_backward: the input gets the gradient where min <= x <= max; a tensor bound
  // gets it where it was the one applied.
  Value inside = b.create<AndOp>(l, b.create<OrOp>(l, b.create<GreaterOp>(l, x, lo),
                                                   b.create<EqualOp>(l, x, lo)),
                                 b.create<OrOp>(l, b.create<LessOp>(l, x, hi),
                                                b.create<EqualOp>(l, x, hi)));
  g.push_back(where(b, l, inside, dys[0], zero));
  g.push_back(unbroadcast(b, l, where(b, l, b.create<LessOp>(l, x, lo), dys[0], zero),
                          typeOf(lo)));
  g.push_back(unbroadcast(b, l, where(b, l, b.create<GreaterOp>(l, x, hi), dys[0], zero),
                          typeOf(hi)));
  return success();
}

LogicalResult CastOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  // Between float types the gradient is cast back to the input's type (bf16 -> f32 rounds the
  // gradient to bf16 on the way back, as PyTorch's autograd of .to() does); casts from
  // integers or bools carry none.
  if (!isDifferentiable(getInput()) || !isDifferentiable(getOutput())) {
    g.push_back(Value());
    return success();
  }
  auto inputType = typeOf(getInput());
  g.push_back(inputType == typeOf(dys[0])
                  ? dys[0]
                  : Value(b.create<CastOp>(gradLoc(*this), dys[0],
                                           TypeAttr::get(inputType.getElementType()))));
  return success();
}

} // namespace shardc::graph
