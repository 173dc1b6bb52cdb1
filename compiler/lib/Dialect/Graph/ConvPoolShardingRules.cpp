//===- ConvPoolShardingRules.cpp - rules of conv, pooling and their gradients -----------===//
//
//   conv      [n, c, *s] x [m, c/g, *k] -> [n, m, *o]   n and m parallel (data and output
//             channels); c summed (a split c leaves partial sums, as matmul's k); with groups
//             the channels stay whole (a group's inputs and outputs must sit together)
//   pools     [n, c, *s] -> [n, c, *o]                   n and c parallel
// Spatial dims stay whole everywhere: a window reads its neighbours across any block edge
// (a halo exchange would be needed to split them).
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace shardc::graph {

namespace {
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

// Which of a convolution's three index sets its op sums over (the one its result lacks).
enum class Summed { Channels, Maps, Batch };

// The factors of one convolution problem x [n, c, *s], w [m, c/g, *k], y [n, m, *o]: batch,
// output maps and input channels (the summed one a reduction), and a whole factor per
// spatial or kernel dim of each tensor.
struct ConvFactors {
  OpShardingRule rule;
  TensorFactors input, weight, output;
};

ConvFactors convFactors(ArrayRef<int64_t> x, ArrayRef<int64_t> w, ArrayRef<int64_t> y,
                        int64_t group, Summed summed) {
  ConvFactors f;
  OpShardingRule &rule = f.rule;
  auto factor = [&](int64_t size, bool isSummed) {
    if (size == 1)
      return -1;
    return isSummed ? rule.addReduction(size) : rule.addFactor(size);
  };
  auto grouped = [&](int64_t size) {
    return size == 1 ? -1 : rule.addWhole(size, "a grouped convolution keeps its groups whole");
  };
  int n = factor(x[0], summed == Summed::Batch);
  int m = group == 1 ? factor(w[0], summed == Summed::Maps) : grouped(w[0]);
  int c = group == 1 ? factor(x[1], summed == Summed::Channels) : grouped(x[1]);
  int perGroup = group == 1 ? c : grouped(w[1]);
  auto withWindow = [&](ArrayRef<int64_t> shape, int first, int second) {
    SmallVector<int> dims{first, second};
    for (int64_t size : shape.drop_front(2))
      dims.push_back(size == 1 ? -1
                               : rule.addWhole(size, "a convolution window reads its "
                                                     "neighbours along it"));
    return OpShardingRule::tensor(dims);
  };
  f.input = withWindow(x, n, c);
  f.weight = withWindow(w, m, perGroup);
  f.output = withWindow(y, n, m);
  return f;
}

// A pool's input [n, c, *s] and output [n, c, *o]: batch and channels parallel, every
// spatial dim whole.
struct PoolFactors {
  OpShardingRule rule;
  TensorFactors input, output;
};

PoolFactors poolFactors(ArrayRef<int64_t> x, ArrayRef<int64_t> y) {
  PoolFactors f;
  OpShardingRule &rule = f.rule;
  int n = x[0] == 1 ? -1 : rule.addFactor(x[0]);
  int c = x[1] == 1 ? -1 : rule.addFactor(x[1]);
  auto withWindow = [&](ArrayRef<int64_t> shape) {
    SmallVector<int> dims{n, c};
    for (int64_t size : shape.drop_front(2))
      dims.push_back(size == 1 ? -1
                               : rule.addWhole(size, "a pooling window reads its neighbours "
                                                     "along it"));
    return OpShardingRule::tensor(dims);
  };
  f.input = withWindow(x);
  f.output = withWindow(y);
  return f;
}
} // namespace

std::optional<OpShardingRule> ConvOp::getShardingRule() {
  ConvFactors f = convFactors(shapeOf(getInput()), shapeOf(getWeight()), shapeOf(getOutput()),
                              getGroup(), Summed::Channels);
  f.rule.operands = {f.input, f.weight};
  f.rule.results = {f.output};
  f.rule.linear = {true, true};
  return f.rule;
}

std::optional<OpShardingRule> ConvGradInputOp::getShardingRule() {
  // dx = dy (x) w, summed over the output maps.
  ConvFactors f = convFactors(shapeOf(getDinput()), shapeOf(getWeight()), shapeOf(getDy()),
                              getGroup(), Summed::Maps);
  f.rule.operands = {f.output, f.weight};
  f.rule.results = {f.input};
  f.rule.linear = {true, true};
  return f.rule;
}

std::optional<OpShardingRule> ConvGradWeightOp::getShardingRule() {
  // dw = dy correlated with x, summed over the batch (and the positions).
  ConvFactors f = convFactors(shapeOf(getInput()), shapeOf(getDweight()), shapeOf(getDy()),
                              getGroup(), Summed::Batch);
  f.rule.operands = {f.input, f.output};
  f.rule.results = {f.weight};
  f.rule.linear = {true, true};
  return f.rule;
}

std::optional<OpShardingRule> MaxPoolOp::getShardingRule() {
  PoolFactors f = poolFactors(shapeOf(getInput()), shapeOf(getOutput()));
  f.rule.operands = {f.input};
  f.rule.results = {f.output};
  f.rule.linear = {false};
  return f.rule;
}

std::optional<OpShardingRule> AvgPoolOp::getShardingRule() {
  PoolFactors f = poolFactors(shapeOf(getInput()), shapeOf(getOutput()));
  f.rule.operands = {f.input};
  f.rule.results = {f.output};
  f.rule.linear = {true};
  return f.rule;
}

std::optional<OpShardingRule> MaxPoolGradOp::getShardingRule() {
  PoolFactors f = poolFactors(shapeOf(getInput()), shapeOf(getDy()));
  f.rule.operands = {f.output, f.input};
  f.rule.results = {f.input};
  // It routes dy (linear) to where x has its maxima (x picks the routes: not linear).
  f.rule.linear = {true, false};
  return f.rule;
}

std::optional<OpShardingRule> AvgPoolGradOp::getShardingRule() {
  PoolFactors f = poolFactors(shapeOf(getDinput()), shapeOf(getDy()));
  f.rule.operands = {f.output};
  f.rule.results = {f.input};
  f.rule.linear = {true};
  return f.rule;
}

} // namespace shardc::graph
