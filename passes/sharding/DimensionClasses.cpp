//===- DimensionClasses.cpp -------------------------------------------------------------===//
#include "passes/sharding/DimensionClasses.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include <map>
#include <numeric>
#include <set>

using namespace mlir;

namespace shardc::sharding {

int DimensionClasses::node(Value value, unsigned dim, int64_t groups) {
  auto key = std::make_tuple(value.getAsOpaquePointer(), dim, groups);
  auto [it, inserted] = ids_.try_emplace(key, static_cast<int>(refs_.size()));
  if (inserted) {
    refs_.push_back({value, dim, groups});
    parent_.push_back(it->second);
    unit_.push_back(0);
    blocked_.emplace_back(nullptr, "");
    max_.push_back(nullptr);
    indexedBy_.push_back(nullptr);
    stridedBy_.push_back(nullptr);
  }
  return it->second;
}

int DimensionClasses::find(int n) const {
  while (parent_[n] != n)
    n = parent_[n] = parent_[parent_[n]];
  return n;
}

void DimensionClasses::unite(int a, int b) {
  a = find(a);
  b = find(b);
  if (a == b)
    return;
  // Keep the earlier node as the root, so that the first blocker in program order wins.
  if (b < a)
    std::swap(a, b);
  parent_[b] = a;
  unit_[a] = std::gcd(unit_[a], unit_[b]);
  if (!blocked_[a].first && blocked_[b].first)
    blocked_[a] = blocked_[b];
  if (!max_[a])
    max_[a] = max_[b];
  if (!indexedBy_[a])
    indexedBy_[a] = indexedBy_[b];
  if (!stridedBy_[a])
    stridedBy_[a] = stridedBy_[b];
}

void DimensionClasses::block(int n, Operation *op, const std::string &why) {
  int r = find(n);
  if (!blocked_[r].first)
    blocked_[r] = {op, why};
}

DimensionClasses::DimensionClasses(func::FuncOp func,
                                   const llvm::SmallPtrSetImpl<Operation *> *wholeOps) {
  // Per op, one node of each of its factors, to find ops whose distinct factors end up in one
  // class once every link is made.
  std::vector<std::pair<Operation *, std::vector<int>>> factorNodes;
  auto dimsOf = [](Value v) -> unsigned {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t ? static_cast<unsigned>(t.getRank()) : 0;
  };
  auto sizeOf = [](Value v, unsigned d) { return cast<RankedTensorType>(v.getType()).getDimSize(d); };
  // Every dimension of size > 1 of the arguments and of every op result is a node.
  for (BlockArgument arg : func.getArguments())
    for (unsigned d = 0; d < dimsOf(arg); ++d)
      if (sizeOf(arg, d) != 1)
        unit_[node(arg, d)] = sizeOf(arg, d);

  func.walk([&](Operation *op) {
    if (op == func || isa<func::ReturnOp>(op))
      return;
    SmallVector<Value> values(op->getOperands());
    values.append(op->result_begin(), op->result_end());
    auto rules = dyn_cast<graph::ShardingRuleOpInterface>(op);
    std::optional<graph::OpShardingRule> rule;
    if (rules)
      rule = rules.getShardingRule();
    for (Value v : op->getResults())
      for (unsigned d = 0; d < dimsOf(v); ++d)
        if (sizeOf(v, d) != 1)
          unit_[node(v, d)] = sizeOf(v, d);
    // A resharding point computes on whole operands: nothing of it ties a split.
    if (wholeOps && wholeOps->contains(op))
      return;
    if (!rule) {
      for (Value v : values)
        for (unsigned d = 0; d < dimsOf(v); ++d)
          if (sizeOf(v, d) != 1) {
            block(node(v, d), op, "it has no sharding rule");
            wholeParts_.push_back({v, d, 2, INT64_MAX, op, "it has no sharding rule"});
          }
      return;
    }
    // Each factor's parts: the first one, to link the others to, and all of them (to share
    // their minor parts, shareMinorParts).
    std::vector<int> firstPlace(rule->factors.size(), -1);
    std::vector<FactorParts> parts(rule->factors.size());
    auto visit = [&](Value v, const graph::TensorFactors &tf) {
      for (unsigned d = 0; d < tf.size() && d < dimsOf(v); ++d) {
        if (tf[d].empty() || sizeOf(v, d) == 1)
          continue;
        int64_t groups = 1;
        for (size_t k = 0; k < tf[d].size(); ++k) {
          const int f = tf[d][k];
          const graph::ShardingFactor &factor = rule->factors[f];
          int n = node(v, d, groups);
          unit_[find(n)] = std::gcd(unit_[find(n)], factor.size);
          if (firstPlace[f] < 0)
            firstPlace[f] = n;
          else
            unite(firstPlace[f], n);
          parts[f].size = factor.size;
          parts[f].at.push_back(n);
          if (factor.kind == graph::FactorKind::Whole) {
            block(n, op, factor.why);
            wholeParts_.push_back({v, d, groups, groups * factor.size, op, factor.why});
          } else if (k > 0 && rule->stridedBatchParts) {
            if (!stridedBy_[find(n)])
              stridedBy_[find(n)] = op;
          } else if (k > 0 && !rule->stridedParts) {
            block(n, op, "a reshape merges it into the minor part of a dimension");
          }
          // An index block is one range of the whole axis: no strided part inside it.
          if (llvm::is_contained(rule->indexedFactors, f) && !indexedBy_[find(n)])
            indexedBy_[find(n)] = op;
          if (llvm::is_contained(rule->indexedFactors, f))
            wholeParts_.push_back({v, d, std::max<int64_t>(groups, 2), groups * factor.size, op,
                                   "its positions are picked by index (an index block is one "
                                   "range)"});
          groups *= factor.size;
        }
        if (rule->positional)
          wholeParts_.push_back({v, d, 2, INT64_MAX, op,
                                 "its kernel reads each element's position (a strided split "
                                 "has no single block offset)"});
      }
    };
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (i < rule->operands.size())
        visit(v, rule->operands[i]);
    for (auto [i, v] : llvm::enumerate(op->getResults()))
      if (i < rule->results.size())
        visit(v, rule->results[i]);
    for (FactorParts &p : parts)
      if (p.at.size() > 1)
        factorParts_.push_back(std::move(p));
    // A reduction that leaves a pending maximum.
    auto markMax = [&](Value v, const graph::TensorFactors &tf) {
      for (unsigned d = 0; d < tf.size() && d < dimsOf(v); ++d)
        if (!tf[d].empty() && sizeOf(v, d) != 1 &&
            rule->factors[tf[d][0]].partial == graph::PartialKind::Max &&
            !max_[find(node(v, d))])
          max_[find(node(v, d))] = op;
    };
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (i < rule->operands.size())
        markMax(v, rule->operands[i]);
    if (!rule->separateOperands) {
      factorNodes.emplace_back(op, std::move(firstPlace));
      return;
    }
    // An op that reduces each operand on its own: its factors meet only within an operand
    // (and the results).
    std::vector<bool> inResult(rule->factors.size(), false);
    for (const graph::TensorFactors &tf : rule->results)
      for (const graph::DimFactors &dim : tf)
        for (int f : dim)
          inResult[f] = true;
    for (const graph::TensorFactors &tf : rule->operands) {
      std::vector<int> nodes(rule->factors.size(), -1);
      for (size_t f = 0; f < nodes.size(); ++f)
        if (inResult[f])
          nodes[f] = firstPlace[f];
      for (const graph::DimFactors &dim : tf)
        for (int f : dim)
          nodes[f] = firstPlace[f];
      factorNodes.emplace_back(op, std::move(nodes));
    }
  });

  shareMinorParts();
  for (const WholeParts &w : wholeParts_)
    for (int64_t g : partsOf_[{w.value.getAsOpaquePointer(), w.dim}])
      if (w.lo <= g && g < w.hi)
        block(node(w.value, w.dim, g), w.op, w.why);

  // An op whose two distinct factors are in one class pairs the blocks of that class with each
  // other (x @ x^T over the batch gives every pair of rows): a device holding its blocks would
  // compute only the pairs of its own. Such a class must stay whole.
  for (auto &[op, nodes] : factorNodes) {
    llvm::SmallDenseMap<int, int> seen; // root -> factor
    for (auto [f, n] : llvm::enumerate(nodes)) {
      if (n < 0)
        continue;
      auto [it, inserted] = seen.try_emplace(find(n), static_cast<int>(f));
      if (!inserted)
        block(n, op, "it pairs blocks of the same dimension with each other (two of its "
                     "factors are in it)");
    }
  }

  classIndex_.assign(refs_.size(), -1);
  for (int n = 0; n < static_cast<int>(refs_.size()); ++n) {
    int r = find(n);
    if (classIndex_[r] < 0) {
      classIndex_[r] = static_cast<int>(classes_.size());
      DimClass c;
      c.unit = unit_[r];
      c.blocker = blocked_[r].first;
      c.why = blocked_[r].second;
      c.maxBy = max_[r];
      c.indexedBy = indexedBy_[r];
      c.stridedBy = stridedBy_[r];
      classes_.push_back(std::move(c));
    }
    classes_[classIndex_[r]].members.push_back(refs_[n]);
  }
  for (auto &[op, nodes] : factorNodes) {
    std::vector<int> classes;
    for (int n : nodes)
      classes.push_back(n < 0 ? -1 : classIndex_[find(n)]);
    opFactorClasses_.emplace_back(op, std::move(classes));
  }
}

void DimensionClasses::shareMinorParts() {
  // The parts (groups > 1) each dimension has, and the factors each dimension holds.
  using DimKey = std::pair<void *, unsigned>;
  std::map<DimKey, std::vector<size_t>> factorsOfDim;
  for (auto [i, p] : llvm::enumerate(factorParts_))
    for (int n : p.at)
      factorsOfDim[{refs_[n].value.getAsOpaquePointer(), refs_[n].dim}].push_back(i);
  std::vector<DimKey> work;
  for (const DimRef &r : std::vector<DimRef>(refs_))
    if (r.groups > 1) {
      DimKey key{r.value.getAsOpaquePointer(), r.dim};
      if (partsOf_[key].insert(r.groups).second)
        work.push_back(key);
    }
  // A factor is the same loop wherever it appears: a part inside one of its places (groups g
  // * h, 1 < h < size, for the place at groups g) is that part inside every other.
  while (!work.empty()) {
    DimKey key = work.back();
    work.pop_back();
    std::vector<int64_t> have(partsOf_[key].begin(), partsOf_[key].end());
    for (size_t i : factorsOfDim[key]) {
      const FactorParts &p = factorParts_[i];
      for (int at : p.at) {
        if (refs_[at].value.getAsOpaquePointer() != key.first || refs_[at].dim != key.second)
          continue;
        const int64_t g = refs_[at].groups;
        for (int64_t inner : have) {
          if (inner <= g || inner >= g * p.size || inner % g || p.size % (inner / g))
            continue;
          const int64_t h = inner / g;
          int source = node(refs_[at].value, refs_[at].dim, inner);
          for (int other : p.at) {
            DimRef o = refs_[other];
            DimKey otherKey{o.value.getAsOpaquePointer(), o.dim};
            int n = node(o.value, o.dim, o.groups * h);
            unite(source, n);
            if (partsOf_[otherKey].insert(o.groups * h).second)
              work.push_back(otherKey);
          }
        }
      }
    }
  }
}

int DimensionClasses::classOf(Value value, unsigned dim, int64_t groups) const {
  auto it = ids_.find(std::make_tuple(value.getAsOpaquePointer(), dim, groups));
  if (it == ids_.end())
    return -1;
  return classIndex_[find(it->second)];
}

std::vector<int64_t> DimensionClasses::partGroups(Value value, unsigned dim) const {
  std::vector<int64_t> groups = {1};
  auto it = partsOf_.find({value.getAsOpaquePointer(), dim});
  if (it != partsOf_.end())
    groups.insert(groups.end(), it->second.begin(), it->second.end());
  return groups;
}

std::string DimensionClasses::describeBlocker(int cls) const {
  const DimClass &c = classes_[cls];
  if (c.blocker)
    return nodeName(c.blocker) + ": " + c.why;
  if (c.maxBy)
    return nodeName(c.maxBy) + ": a maximum over it would leave a pending maximum, which no "
                               "collective takes yet";
  return "";
}

std::string DimensionClasses::describeBatchBlocker(int cls) const {
  std::string why = describeBlocker(cls);
  if (why.empty() && classes_[cls].indexedBy)
    why = nodeName(classes_[cls].indexedBy) + ": it picks positions of it by index values";
  return why;
}

Operation *DimensionClasses::splitPreventedBy(int cls) const {
  const DimClass &c = classes_[cls];
  return c.blocker ? c.blocker : c.maxBy ? c.maxBy : c.indexedBy;
}

std::string DimensionClasses::describeTensorParallelBlocker(int cls) const {
  std::string why = describeBlocker(cls);
  if (why.empty() && classes_[cls].stridedBy)
    why = nodeName(classes_[cls].stridedBy) +
          ": a reshape merges it into the minor part of a dimension";
  return why;
}

std::string argName(mlir::func::FuncOp func, unsigned i) {
  for (llvm::StringRef attr : {graph::kInputAttr, graph::kParamAttr, kStateAttr})
    if (auto n = func.getArgAttrOfType<mlir::StringAttr>(i, attr))
      return n.str();
  return "argument " + std::to_string(i);
}

std::string valueName(mlir::Value v) {
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v))
    if (auto func = llvm::dyn_cast<mlir::func::FuncOp>(arg.getOwner()->getParentOp()))
      return "'" + argName(func, arg.getArgNumber()) + "'";
  return "the result of " + nodeName(v.getDefiningOp());
}

} // namespace shardc::sharding
