//===- BlockedResharding.cpp - choosing the dimension a resharding point is computed in ----===//
#include "passes/sharding/BlockedResharding.h"

#include "llvm/ADT/STLExtras.h"

namespace shardc::sharding {

namespace {

int64_t bytesOf(const ReshardTensor &t) {
  int64_t n = t.elementBytes;
  for (int64_t d : t.shape)
    n *= d;
  return n;
}

// The dimension of a tensor whose only factor is `f`; -1 when no dimension has it, -2 when
// one merges it with others (a reshape's), which the blocks cannot follow.
int dimOfFactor(const graph::TensorFactors &tf, int f) {
  int found = -1;
  for (auto [d, factors] : llvm::enumerate(tf)) {
    if (!llvm::is_contained(factors, f))
      continue;
    if (factors.size() != 1 || found >= 0)
      return -2;
    found = static_cast<int>(d);
  }
  return found;
}

} // namespace

int64_t wholeOperandsBytesSent(llvm::ArrayRef<ReshardTensor> operands, int64_t ranks) {
  int64_t sent = 0;
  for (const ReshardTensor &t : operands)
    if (t.splitDim >= 0)
      sent += bytesOf(t) / ranks * (ranks - 1);
  return sent;
}

std::optional<BlockedReshard> cheapestBlockedReshard(const graph::OpShardingRule &rule,
                                                     llvm::ArrayRef<ReshardTensor> operands,
                                                     llvm::ArrayRef<ReshardTensor> results,
                                                     int64_t ranks) {
  if (ranks < 2 || rule.positional || rule.separateOperands || results.empty() ||
      rule.operands.size() != operands.size() || rule.results.size() != results.size())
    return std::nullopt;
  std::optional<BlockedReshard> best;
  for (auto [f, factor] : llvm::enumerate(rule.factors)) {
    const int fi = static_cast<int>(f);
    if (factor.kind != graph::FactorKind::Parallel || factor.size % ranks != 0 ||
        llvm::is_contained(rule.indexedFactors, fi))
      continue;
    BlockedReshard plan;
    plan.factor = fi;
    bool usable = true;
    for (auto [i, t] : llvm::enumerate(operands)) {
      int d = dimOfFactor(rule.operands[i], fi);
      // A strided split moves to other blocks only through the whole tensor.
      if (d == -2 || (d >= 0 && t.groups != 1 && t.splitDim >= 0)) {
        usable = false;
        break;
      }
      plan.operandDims.push_back(d);
      const int64_t block = bytesOf(t) / ranks;
      if (t.splitDim >= 0 && d < 0)
        plan.gatheredBytes += block * (ranks - 1);
      else if (t.splitDim >= 0 && d != t.splitDim)
        plan.exchangedBytes += block / ranks * (ranks - 1);
    }
    for (auto [i, t] : llvm::enumerate(results)) {
      int d = usable ? dimOfFactor(rule.results[i], fi) : -1;
      if (d < 0) {
        usable = false;
        break;
      }
      plan.resultDims.push_back(d);
      const int64_t block = bytesOf(t) / ranks;
      if (t.splitDim < 0 || t.groups != 1)
        plan.gatheredBytes += block * (ranks - 1);
      else if (t.splitDim != d)
        plan.exchangedBytes += block / ranks * (ranks - 1);
    }
    if (usable && (!best || plan.bytesSent() < best->bytesSent()))
      best = std::move(plan);
  }
  if (best && best->bytesSent() <= wholeOperandsBytesSent(operands, ranks))
    return best;
  return std::nullopt;
}

} // namespace shardc::sharding
