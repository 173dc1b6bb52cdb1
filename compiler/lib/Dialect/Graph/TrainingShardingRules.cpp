//===- TrainingShardingRules.cpp - rules of the optimizer ops and the collectives -------===//
//
// Optimizer updates are elementwise over the parameter, its gradient and its state (the step
// and the learning rate are scalars), so they split along any dimension of the parameter: a
// tensor-parallel parameter is updated where it lives. The gradient norm sums the squares of
// every gradient, which is not a sum of the devices' norms: its operands stay whole here
// (shardc-all-reduce-gradients and the ZeRO passes make the norm global for data parallelism).
// Collectives exist only after partitioning: they have no rule.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

namespace {
// Operands and results with the parameter's shape share its factors; scalars have none.
OpShardingRule optimizerUpdate(Operation *op) {
  OpShardingRule rule;
  ArrayRef<int64_t> param = cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
  TensorFactors p = rule.freshTensor(param);
  auto shaped = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape() == param ? p : TensorFactors();
  };
  for (Value v : op->getOperands())
    rule.operands.push_back(shaped(v));
  for (Value v : op->getResults())
    rule.results.push_back(shaped(v));
  rule.linear.assign(op->getNumOperands(), false);
  return rule;
}
} // namespace

std::optional<OpShardingRule> AdamWUpdateOp::getShardingRule() { return optimizerUpdate(*this); }
std::optional<OpShardingRule> SGDUpdateOp::getShardingRule() { return optimizerUpdate(*this); }
std::optional<OpShardingRule> ScaleByClipOp::getShardingRule() {
  OpShardingRule rule = optimizerUpdate(*this);
  rule.linear[0] = true;
  return rule;
}

std::optional<OpShardingRule> GlobalNormOp::getShardingRule() {
  // Tensor parallelism would need the squares of each device's blocks summed over tp (and
  // the replicated gradients counted once): not yet, so --grad-clip keeps every gradient whole.
  return sharding::allWhole(*this, "gradient clipping (--grad-clip) needs the norm of the "
                                   "whole gradients, which tensor parallelism does not "
                                   "support yet");
}

std::optional<OpShardingRule> AllReduceOp::getShardingRule() { return std::nullopt; }
std::optional<OpShardingRule> ReduceScatterOp::getShardingRule() { return std::nullopt; }
std::optional<OpShardingRule> AllGatherOp::getShardingRule() { return std::nullopt; }
std::optional<OpShardingRule> ShardSliceOp::getShardingRule() { return std::nullopt; }

} // namespace shardc::graph
