//===- ShardingRule.cpp - building sharding rules ---------------------------------------===//
#include "shardc/Dialect/Graph/ShardingRule.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;

namespace shardc::graph {

int OpShardingRule::addFactor(int64_t size, FactorKind kind) {
  ShardingFactor f;
  f.size = size;
  f.kind = kind;
  factors.push_back(std::move(f));
  return static_cast<int>(factors.size()) - 1;
}

int OpShardingRule::addReduction(int64_t size, PartialKind partial) {
  int f = addFactor(size);
  factors[f].partial = partial;
  return f;
}

int OpShardingRule::addWhole(int64_t size, std::string why) {
  int f = addFactor(size, FactorKind::Whole);
  factors[f].why = std::move(why);
  return f;
}

void OpShardingRule::makeWhole(int factor, std::string why) {
  ShardingFactor &f = factors[factor];
  if (f.kind == FactorKind::Whole)
    return;
  f.kind = FactorKind::Whole;
  f.why = std::move(why);
}

TensorFactors OpShardingRule::tensor(ArrayRef<int> factorOfDim) {
  TensorFactors t;
  for (int f : factorOfDim) {
    t.emplace_back();
    if (f >= 0)
      t.back().push_back(f);
  }
  return t;
}

TensorFactors OpShardingRule::freshTensor(ArrayRef<int64_t> shape, FactorKind kind) {
  TensorFactors t;
  for (int64_t size : shape) {
    t.emplace_back();
    if (size != 1)
      t.back().push_back(addFactor(size, kind));
  }
  return t;
}

namespace sharding {

namespace {
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

// Every tensor of `values` aligned from the right with the dims of `factorOfDim` (the result's
// factors); a dimension of another size (1, broadcast) gets none.
void alignRight(ValueRange values, ArrayRef<int> factorOfDim, ArrayRef<int64_t> resultShape,
                SmallVectorImpl<TensorFactors> &out) {
  for (Value v : values) {
    ArrayRef<int64_t> shape = shapeOf(v);
    TensorFactors t(shape.size());
    size_t offset = resultShape.size() - shape.size();
    for (size_t d = 0; d < shape.size(); ++d)
      if (factorOfDim[offset + d] >= 0 && shape[d] == resultShape[offset + d])
        t[d].push_back(factorOfDim[offset + d]);
    out.push_back(std::move(t));
  }
}
} // namespace

OpShardingRule elementwise(Operation *op) {
  OpShardingRule rule;
  // The result shape is the broadcast of all operands (every result has it).
  ArrayRef<int64_t> resultShape = shapeOf(op->getResult(0));
  SmallVector<int> factorOfDim;
  for (int64_t size : resultShape)
    factorOfDim.push_back(size == 1 ? -1 : rule.addFactor(size));
  // Scalar operands (rank 0) and lower-rank ones align from the right (NumPy broadcasting).
  alignRight(op->getOperands(), factorOfDim, resultShape, rule.operands);
  for (Value r : op->getResults()) {
    if (shapeOf(r) != resultShape) {
      // A result of another shape (none of the elementwise ops has one): leave it unlinked.
      rule.results.push_back(rule.freshTensor(shapeOf(r), FactorKind::Whole));
      continue;
    }
    rule.results.push_back(OpShardingRule::tensor(factorOfDim));
  }
  rule.linear.assign(op->getNumOperands(), false);
  return rule;
}

OpShardingRule reshape(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  OpShardingRule rule;
  int64_t inCount = 1, outCount = 1;
  for (int64_t s : in)
    inCount *= s;
  for (int64_t s : out)
    outCount *= s;
  if (inCount != outCount) {
    // Not a reshape (the verifier rejects it); no dimension may split.
    rule.operands.push_back(rule.freshTensor(in, FactorKind::Whole));
    rule.results.push_back(rule.freshTensor(out, FactorKind::Whole));
    for (ShardingFactor &f : rule.factors)
      f.why = "the reshape's element counts differ";
    rule.linear = {false};
    return rule;
  }
  rule.operands.emplace_back(in.size());
  rule.results.emplace_back(out.size());
  TensorFactors &inF = rule.operands[0], &outF = rule.results[0];
  size_t i = 0, j = 0;
  auto skipOnes = [&] {
    while (i < in.size() && in[i] == 1)
      ++i;
    while (j < out.size() && out[j] == 1)
      ++j;
  };
  skipOnes();
  while (i < in.size() && j < out.size()) {
    // The smallest group [i, i2) x [j, j2) with equal products.
    size_t i2 = i + 1, j2 = j + 1;
    int64_t pi = in[i], pj = out[j];
    while (pi != pj && i2 <= in.size() && j2 <= out.size()) {
      if (pi < pj && i2 < in.size())
        pi *= in[i2++];
      else if (pj < pi && j2 < out.size())
        pj *= out[j2++];
      else
        break;
    }
    if (pi != pj)
      break; // unreachable with equal element counts
    // Prefix products from the major side; a common refinement exists when their union is a
    // divisibility chain.
    SmallVector<int64_t> cuts;
    int64_t p = 1;
    for (size_t k = i; k < i2; ++k)
      cuts.push_back(p *= in[k]);
    p = 1;
    for (size_t k = j; k < j2; ++k)
      cuts.push_back(p *= out[k]);
    llvm::sort(cuts);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    bool chain = true;
    for (size_t k = 1; k < cuts.size(); ++k)
      chain = chain && cuts[k] % cuts[k - 1] == 0;
    if (!chain) {
      // 6x4 -> 4x6: no dimension of one side is a block of the other's; keep the group whole.
      for (size_t k = i; k < i2; ++k)
        if (in[k] != 1)
          inF[k].push_back(rule.addWhole(in[k], "a reshape regroups it"));
      for (size_t k = j; k < j2; ++k)
        if (out[k] != 1)
          outF[k].push_back(rule.addWhole(out[k], "a reshape regroups it"));
    } else {
      SmallVector<int> factorAtCut;
      int64_t prev = 1;
      for (int64_t c : cuts) {
        factorAtCut.push_back(rule.addFactor(c / prev));
        prev = c;
      }
      // Dimension k spans the factors from its predecessor's cut (exclusive) to its own.
      auto assign = [&](ArrayRef<int64_t> shape, size_t from, size_t to, TensorFactors &tf) {
        int64_t prefix = 1;
        size_t next = 0;
        for (size_t k = from; k < to; ++k) {
          prefix *= shape[k];
          while (next < cuts.size() && cuts[next] <= prefix)
            tf[k].push_back(factorAtCut[next++]);
        }
      };
      assign(in, i, i2, inF);
      assign(out, j, j2, outF);
    }
    i = i2;
    j = j2;
    skipOnes();
  }
  // A minor factor split by the batch is a strided set of rows of the merged dimension
  // ([L, B] -> [L*B] with B split: each device holds its B/n rows of every l), which the local
  // reshape of the local block produces in the same order. Ops that need such a dimension
  // whole, or read positions in it, keep it whole through their own rules.
  rule.stridedBatchParts = true;
  rule.linear = {true};
  return rule;
}

OpShardingRule reduction(ArrayRef<int64_t> shape, ArrayRef<int64_t> axes, bool keepdims,
                         PartialKind partial) {
  OpShardingRule rule;
  TensorFactors in(shape.size()), out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
    int f = shape[d] == 1 ? -1 : reduced ? rule.addReduction(shape[d], partial)
                                         : rule.addFactor(shape[d]);
    if (f >= 0)
      in[d].push_back(f);
    if (!reduced)
      out.push_back(in[d]);
    else if (keepdims)
      out.emplace_back();
  }
  rule.operands.push_back(std::move(in));
  rule.results.push_back(std::move(out));
  // A sum or mean of a pending sum is the pending sum of the local sums.
  rule.linear = {partial != PartialKind::Max};
  return rule;
}

OpShardingRule allWhole(Operation *op, StringRef why) {
  OpShardingRule rule;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    rule.operands.push_back(t ? rule.freshTensor(t.getShape(), FactorKind::Whole)
                              : TensorFactors());
  }
  for (Value v : op->getResults()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    rule.results.push_back(t ? rule.freshTensor(t.getShape(), FactorKind::Whole)
                             : TensorFactors());
  }
  for (ShardingFactor &f : rule.factors)
    f.why = why.str();
  rule.linear.assign(op->getNumOperands(), false);
  return rule;
}

} // namespace sharding

} // namespace shardc::graph
