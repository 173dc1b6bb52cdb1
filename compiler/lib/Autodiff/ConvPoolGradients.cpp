//===- ConvPoolGradients.cpp - VJPs of conv and pooling ---------------------------------===//
//
// Each backward is one fused op (GraphTrainingOps.td) whose result type is the forward
// operand's: a transposed convolution, a weight correlation, and the pools' adjoints.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

LogicalResult ConvOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &g) {
  Location l = gradLoc(*this);
  g.push_back(b.create<ConvGradInputOp>(l, getInput().getType(), dys[0], getWeight(),
                                        getStridesAttr(), getPadsAttr(), getDilationsAttr(),
                                        getGroupAttr()));
  g.push_back(b.create<ConvGradWeightOp>(l, getWeight().getType(), getInput(), dys[0],
                                         getStridesAttr(), getPadsAttr(), getDilationsAttr(),
                                         getGroupAttr()));
  return success();
}

LogicalResult MaxPoolOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &g) {
  g.push_back(b.create<MaxPoolGradOp>(gradLoc(*this), getInput().getType(), dys[0], getInput(),
                                      getKernelShapeAttr(), getStridesAttr(), getPadsAttr(),
                                      getDilationsAttr()));
  return success();
}

LogicalResult AvgPoolOp::buildVjp(OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &g) {
  g.push_back(b.create<AvgPoolGradOp>(gradLoc(*this), getInput().getType(), dys[0],
                                      getKernelShapeAttr(), getStridesAttr(), getPadsAttr(),
                                      getCountIncludePadAttr()));
  return success();
}

} // namespace shardc::graph
