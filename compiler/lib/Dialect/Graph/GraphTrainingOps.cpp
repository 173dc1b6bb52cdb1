//===- GraphTrainingOps.cpp - verifiers of the backward and optimizer ops ---------------===//
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"

using namespace mlir;
using namespace shardc::graph;

namespace {
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult verifySameType(Operation *op, Value a, Value b, StringRef what) {
  if (a.getType() != b.getType())
    return op->emitOpError(what) << " must have type " << b.getType() << ", got " << a.getType();
  return success();
}

LogicalResult verifyScalar(Operation *op, Value v, StringRef what) {
  if (typeOf(v).getRank() != 0)
    return op->emitOpError(what) << " must be a scalar";
  return success();
}
} // namespace

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifySameType(*this, getDy(), getInput(), "dy")) ||
      failed(verifySameType(*this, getDinput(), getInput(), "dinput")) ||
      failed(verifySameType(*this, getDscale(), getScale(), "dscale")) ||
      failed(verifySameType(*this, getDbias(), getScale(), "dbias")))
    return failure();
  if (static_cast<int64_t>(getAxis()) >= typeOf(getInput()).getRank())
    return emitOpError("axis out of range");
  return success();
}

LogicalResult SoftmaxCrossEntropyLossGradOp::verify() {
  return verifySameType(*this, getDscores(), getLogProb(), "dscores");
}

LogicalResult AdamWUpdateOp::verify() {
  Value p = getParam();
  for (auto [v, what] : {std::pair<Value, StringRef>{getGrad(), "grad"},
                         {getExpAvg(), "exp_avg"}, {getExpAvgSq(), "exp_avg_sq"},
                         {getNewParam(), "new_param"}, {getNewExpAvg(), "new_exp_avg"},
                         {getNewExpAvgSq(), "new_exp_avg_sq"}})
    if (failed(verifySameType(*this, v, p, what)))
      return failure();
  if (failed(verifyScalar(*this, getStep(), "step")) || failed(verifyScalar(*this, getLr(), "lr")))
    return failure();
  if (getSkip() && failed(verifyScalar(*this, getSkip(), "skip")))
    return failure();
  return success();
}

LogicalResult SGDUpdateOp::verify() {
  Value p = getParam();
  for (auto [v, what] : {std::pair<Value, StringRef>{getGrad(), "grad"},
                         {getMomentumBuffer(), "momentum_buffer"}, {getNewParam(), "new_param"},
                         {getNewMomentumBuffer(), "new_momentum_buffer"}})
    if (failed(verifySameType(*this, v, p, what)))
      return failure();
  if (failed(verifyScalar(*this, getStep(), "step")) || failed(verifyScalar(*this, getLr(), "lr")))
    return failure();
  if (getSkip() && failed(verifyScalar(*this, getSkip(), "skip")))
    return failure();
  return success();
}
