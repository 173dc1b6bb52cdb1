//===- ElementwiseShardingRules.cpp - rules of elementwise ops and constants ------------===//
//
// Elementwise ops split along any dimension of their (broadcast) result. They pass a pending
// sum through only where they are linear in it: neg and identity; mul in either operand (the
// other without a pending sum); div in its numerator; add and sub when both operands carry
// the same pending sum.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

using sharding::elementwise;

namespace {
OpShardingRule elementwiseLinear(Operation *op, ArrayRef<bool> linear) {
  OpShardingRule rule = elementwise(op);
  rule.linear.assign(linear.begin(), linear.end());
  return rule;
}
} // namespace

// A constant has no operands: its dimensions link to whatever uses it. The partitioner keeps
// the block of a split dimension when every block holds the same values (a constant expanded
// along the batch) and refuses the split otherwise.
std::optional<OpShardingRule> ConstantOp::getShardingRule() {
  OpShardingRule rule;
  rule.results.push_back(rule.freshTensor(getType().getShape()));
  return rule;
}

#define ELEMENTWISE_RULE(OP)                                                                   \
  std::optional<OpShardingRule> OP::getShardingRule() { return elementwise(*this); }
ELEMENTWISE_RULE(AbsOp)
ELEMENTWISE_RULE(ReluOp)
ELEMENTWISE_RULE(SqrtOp)
ELEMENTWISE_RULE(ReciprocalOp)
ELEMENTWISE_RULE(ExpOp)
ELEMENTWISE_RULE(LogOp)
ELEMENTWISE_RULE(TanhOp)
ELEMENTWISE_RULE(ErfOp)
ELEMENTWISE_RULE(SinOp)
ELEMENTWISE_RULE(CosOp)
ELEMENTWISE_RULE(SigmoidOp)
ELEMENTWISE_RULE(SoftplusOp)
ELEMENTWISE_RULE(NotOp)
ELEMENTWISE_RULE(GeluOp)
ELEMENTWISE_RULE(PowOp)
ELEMENTWISE_RULE(MaxOp)
ELEMENTWISE_RULE(MinOp)
ELEMENTWISE_RULE(ModOp)
ELEMENTWISE_RULE(EqualOp)
ELEMENTWISE_RULE(LessOp)
ELEMENTWISE_RULE(GreaterOp)
ELEMENTWISE_RULE(AndOp)
ELEMENTWISE_RULE(OrOp)
ELEMENTWISE_RULE(WhereOp)
ELEMENTWISE_RULE(ClipOp)
ELEMENTWISE_RULE(GeluGradOp)
#undef ELEMENTWISE_RULE

std::optional<OpShardingRule> NegOp::getShardingRule() { return elementwiseLinear(*this, {true}); }
std::optional<OpShardingRule> IdentityOp::getShardingRule() {
  return elementwiseLinear(*this, {true});
}
std::optional<OpShardingRule> MulOp::getShardingRule() {
  return elementwiseLinear(*this, {true, true});
}
std::optional<OpShardingRule> DivOp::getShardingRule() {
  // Integer division truncates: only a float numerator passes a pending sum.
  return elementwiseLinear(*this, {getType().getElementType().isF32(), false});
}

static OpShardingRule sumOfOperands(Operation *op) {
  OpShardingRule rule = elementwise(op);
  rule.sumsOperands = true;
  return rule;
}
std::optional<OpShardingRule> AddOp::getShardingRule() { return sumOfOperands(*this); }
std::optional<OpShardingRule> SubOp::getShardingRule() { return sumOfOperands(*this); }

std::optional<OpShardingRule> CastOp::getShardingRule() {
  // f32 -> f32 is the identity and widening a 16-bit float to f32 is exact: both linear. A
  // rounding to a 16-bit float passes on the batch's pending sums only (see linearOverBatch);
  // any other cast truncates.
  Type from = getInput().getType().getElementType(), to = getType().getElementType();
  bool half = [](Type t) { return t.isBF16() || t.isF16(); }(from);
  bool toHalf = to.isBF16() || to.isF16();
  OpShardingRule rule = elementwiseLinear(*this, {from == to || (half && to.isF32())});
  rule.linearOverBatch.push_back(from.isF32() && toHalf);
  return rule;
}

std::optional<OpShardingRule> TriluOp::getShardingRule() {
  OpShardingRule rule = elementwise(*this);
  // The triangle is decided by each element's row and column index.
  ArrayRef<int64_t> shape = getType().getShape();
  for (size_t d = shape.size() - 2; d < shape.size(); ++d)
    for (int f : rule.results[0][d])
      rule.makeWhole(f, "trilu keeps elements by their row and column index");
  return rule;
}

// A training dropout draws each element's keep-bit from its index in the whole tensor; the
// partitioner records where a device's block lies (graph.global_shape, graph.split_dim), so a
// split step draws the same mask as the whole one.
std::optional<OpShardingRule> DropoutOp::getShardingRule() {
  OpShardingRule rule = elementwise(*this);
  rule.positional = isRandom();
  return rule;
}

} // namespace shardc::graph
