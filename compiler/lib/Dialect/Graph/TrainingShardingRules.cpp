//===- TrainingShardingRules.cpp - rules of the optimizer ops and the collectives -------===//
//
// Optimizer updates are elementwise over the parameter, its gradient and its state (the step
// and the learning rate are scalars), so they split along any dimension of the parameter: a
// tensor-parallel parameter is updated where it lives. The gradient norm reduces every
// dimension of every gradient into a norm: a split gradient leaves the norm of the device's
// blocks, which shardc-partition combines over the devices as the root of the sum of squares
// (counting a replicated gradient once); the data-parallel passes do the same over dp for
// ZeRO's gradient shards.
// Collectives exist only after partitioning: they have no rule.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

#include <map>

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
  // A zero parameter with zero gradient and moments stays zero (weight decay included).
  rule.keepsZeroPadding = true;
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
  OpShardingRule rule;
  for (Value v : getInputs()) {
    TensorFactors t;
    for (int64_t size : cast<RankedTensorType>(v.getType()).getShape()) {
      t.emplace_back();
      if (size != 1)
        t.back().push_back(rule.addReduction(size, PartialKind::Norm));
    }
    rule.operands.push_back(std::move(t));
  }
  rule.results.push_back(TensorFactors());
  rule.linear.assign(getNumOperands(), false);
  rule.separateOperands = true;
  return rule;
}

// The gradient norm when some gradients are split: each device takes the norm of the
// gradients split on the same mesh axes together, squares it and sums the squares over those
// axes; the replicated gradients' square is added once. (Over dp, the data-parallel passes do
// the same for ZeRO's gradient shards.) The groups go in the order of their axes as a bit set.
FailureOr<bool> GlobalNormOp::buildLocalForm(LocalShardingContext &context) {
  auto maskOf = [](ArrayRef<mesh::MeshAxis> axes) {
    unsigned m = 0;
    for (mesh::MeshAxis a : axes)
      m |= 1u << a;
    return m;
  };
  std::map<unsigned, std::pair<SmallVector<mesh::MeshAxis>, SmallVector<Value>>> byAxes;
  for (Value g : getInputs()) {
    SmallVector<mesh::MeshAxis> axes = context.axesSplitting(g);
    auto &group = byAxes[maskOf(axes)];
    group.first = axes;
    group.second.push_back(g);
  }
  if (byAxes.size() == 1 && byAxes.begin()->first == 0)
    return true;
  OpBuilder b(*this);
  Type scalar = getNorm().getType();
  Value total;
  for (auto &[mask, group] : byAxes) {
    auto &[axes, grads] = group;
    Value part = b.create<GlobalNormOp>(getLoc(), scalar, grads);
    Value square = b.create<MulOp>(getLoc(), scalar, part, part);
    if (mask)
      square = context.buildAllReduce(b, getLoc(), square, axes);
    total = total ? b.create<AddOp>(getLoc(), scalar, total, square) : square;
  }
  getNorm().replaceAllUsesWith(b.create<SqrtOp>(getLoc(), scalar, total));
  erase();
  return true;
}

std::optional<OpShardingRule> AllReduceOp::getShardingRule() { return std::nullopt; }
std::optional<OpShardingRule> ReduceScatterOp::getShardingRule() { return std::nullopt; }
std::optional<OpShardingRule> AllGatherOp::getShardingRule() { return std::nullopt; }
std::optional<OpShardingRule> AllToAllOp::getShardingRule() { return std::nullopt; }
std::optional<OpShardingRule> ShardSliceOp::getShardingRule() { return std::nullopt; }
std::optional<OpShardingRule> SendRecvOp::getShardingRule() { return std::nullopt; }

} // namespace shardc::graph
