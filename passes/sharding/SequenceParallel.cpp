//===- SequenceParallel.cpp -------------------------------------------------------------===//
#include "passes/sharding/SequenceParallel.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <functional>
#include <map>
#include <numeric>
#include <set>

using namespace mlir;

namespace shardc::sharding {
namespace {

struct RuledOp {
  Operation *op = nullptr;
  graph::OpShardingRule rule;
  std::vector<int> factorClasses;
};

int64_t elementsOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getNumElements() : 0;
}

bool splitOnTp(Value v) {
  for (const auto &axes : splitAxes(v))
    if (llvm::is_contained(axes, 1))
      return true;
  return false;
}

// The dimension of a tensor whose factors `tf` hold factor f (-1: none); -2 when f appears
// in more than one dimension or as the minor part of a merged dimension (its blocks would not
// be contiguous blocks of the dimension).
int dimOfFactor(const graph::TensorFactors &tf, int f) {
  int found = -1;
  for (size_t d = 0; d < tf.size(); ++d)
    for (size_t k = 0; k < tf[d].size(); ++k)
      if (tf[d][k] == f) {
        if (k != 0 || found >= 0)
          return -2;
        found = static_cast<int>(d);
      }
  return found;
}

// A value and the dimension of it that a region splits.
struct SplitDim {
  Value value;
  int dim;
};

// The regions of one candidate class: its sequence-local ops (op -> factor) and what each
// region costs and saves.
struct Candidate {
  int cls = -1;
  llvm::MapVector<Operation *, int> localOps;   // kept ops -> the factor split
  std::vector<SplitDim> splitValues;            // kept values
  int64_t splitElements = 0, regions = 0, rejectedRegions = 0;
  int64_t scatteredElements = 0, gatheredElements = 0, slices = 0, scatters = 0, gathers = 0;
};

class Chooser {
public:
  Chooser(func::FuncOp func, const DimensionClasses &dc, const std::vector<int> &classAxis,
          int64_t tp)
      : func_(func), dc_(dc), classAxis_(classAxis), tp_(tp) {
    llvm::DenseSet<Operation *> seen;
    for (const auto &[op, classes] : dc.opFactorClasses()) {
      auto iface = dyn_cast<graph::ShardingRuleOpInterface>(op);
      std::optional<graph::OpShardingRule> rule = iface ? iface.getShardingRule() : std::nullopt;
      // An op that reduces its operands separately (the gradient norm) is the optimizer's.
      if (!rule || rule->separateOperands || !seen.insert(op).second)
        continue;
      index_[op] = static_cast<int>(ops_.size());
      ops_.push_back({op, std::move(*rule), classes});
    }
  }

  // Whether `v` is a pending sum over tp in the tensor-parallel layout: its producer reduces
  // over a factor split on tp that `v` lacks, or sums such pending sums (autodiff's
  // accumulation of a value's gradient terms, which shardc-partition all-reduces once).
  bool pendingOnTp(Value v) const {
    auto known = pending_.find(v);
    if (known != pending_.end())
      return known->second;
    bool pending = computePendingOnTp(v);
    pending_[v] = pending;
    return pending;
  }

  bool computePendingOnTp(Value v) const {
    auto result = dyn_cast<OpResult>(v);
    if (!result)
      return false;
    auto it = index_.find(result.getOwner());
    if (it == index_.end())
      return false;
    const RuledOp &r = ops_[it->second];
    if (sumOfPendingSums(r))
      return true;
    unsigned i = result.getResultNumber();
    if (i >= r.rule.results.size())
      return false;
    std::vector<bool> present(r.rule.factors.size(), false);
    for (const graph::DimFactors &dim : r.rule.results[i])
      for (int f : dim)
        present[f] = true;
    for (size_t f = 0; f < r.factorClasses.size() && f < present.size(); ++f)
      if (!present[f] && r.factorClasses[f] >= 0 && classAxis_[r.factorClasses[f]] == 1)
        return true;
    return false;
  }

  bool sumOfPendingSums(const RuledOp &r) const {
    return r.rule.sumsOperands && r.op->getNumOperands() > 0 &&
           llvm::all_of(r.op->getOperands(), [&](Value v) { return pendingOnTp(v); });
  }

  // Autodiff accumulates a gradient term by term, ((r + q) + p) + ...; when q, p, ... are
  // pending sums over tp and r is not, each term would enter a region by a reduce-scatter of
  // its own. Rewires the chain to r + ((q + p) + ...), whose pending terms enter once (as
  // shardc-partition does for all-reduces). Float sums are reordered, as any collective
  // reorders them.
  void sumPendingTermsFirst(func::FuncOp func) {
    SmallVector<graph::AddOp> adds;
    func.walk([&](graph::AddOp add) { adds.push_back(add); });
    for (graph::AddOp outer : adds) {
      for (unsigned pi = 0; pi < 2; ++pi) {
        Value p = outer->getOperand(pi), a = outer->getOperand(1 - pi);
        auto inner = a.getDefiningOp<graph::AddOp>();
        if (!inner || !a.hasOneUse() || !pendingOnTp(p) || pendingOnTp(a) ||
            p.getType() != a.getType())
          continue;
        Value x = inner->getOperand(0), y = inner->getOperand(1);
        if (pendingOnTp(x) == pendingOnTp(y) || x.getType() != y.getType() ||
            x.getType() != p.getType())
          continue;
        Value q = pendingOnTp(x) ? x : y, r = pendingOnTp(x) ? y : x;
        inner->moveBefore(outer);
        inner->setOperands({q, p});
        outer->setOperands({r, a});
        pending_.clear();
        break;
      }
    }
  }

  // The factor of class `cls` that `r` computes block by block, or -1.
  int localFactor(const RuledOp &r, int cls) const {
    Operation *op = r.op;
    // A sum of pending sums stays one pending sum: it enters a region by one reduce-scatter.
    if (sumOfPendingSums(r))
      return -1;
    if (isa<graph::ConstantOp, graph::ScaleByClipOp>(op) ||
        op->hasTrait<graph::traits::OptimizerUpdate>())
      return -1;
    int f = -1;
    for (size_t i = 0; i < r.factorClasses.size(); ++i)
      if (r.factorClasses[i] == cls) {
        if (f >= 0)
          return -1; // it pairs blocks of the class with each other
        f = static_cast<int>(i);
      }
    if (f < 0 || r.rule.factors[f].kind != graph::FactorKind::Parallel ||
        r.rule.factors[f].size % tp_ || llvm::is_contained(r.rule.indexedFactors, f))
      return -1;
    int64_t largestSplit = 0;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      if (splitOnTp(v))
        return -1;
      if (i < r.rule.operands.size()) {
        int d = dimOfFactor(r.rule.operands[i], f);
        if (d == -2)
          return -1;
        if (d >= 0)
          largestSplit = std::max(largestSplit, elementsOf(v));
      }
    }
    for (auto [i, v] : llvm::enumerate(op->getResults())) {
      if (splitOnTp(v) || i >= r.rule.results.size())
        return -1;
      int d = dimOfFactor(r.rule.results[i], f);
      if (d == -2)
        return -1;
      // A reduction over the split leaves a pending sum over tp: only when it is small (a
      // norm's weight gradient), never a whole table's gradient in place of its lookups'.
      if (d == -1 && (r.rule.factors[f].partial != graph::PartialKind::Sum ||
                      elementsOf(v) * tp_ > largestSplit))
        return -1;
    }
    return f;
  }

  // The regions of class `cls`. With `pruneTies`, an op whose results all leave is also left
  // out when they are no larger than what it reads split: a chain of such ops (a replicated
  // projection, its split into q, k, v, their reshapes and transposes) then leaves the region
  // from its start, where one value is all-gathered instead of several.
  Candidate evaluate(int cls, bool pruneTies) const {
    Candidate c;
    c.cls = cls;
    std::vector<int> factor(ops_.size(), -1);
    for (size_t i = 0; i < ops_.size(); ++i)
      factor[i] = localFactor(ops_[i], cls);
    // The dimension of operand/result v of local op i that holds its factor (-1: none).
    auto operandDim = [&](size_t i, unsigned k) {
      const auto &tf = ops_[i].rule.operands;
      return k < tf.size() ? dimOfFactor(tf[k], factor[i]) : -1;
    };
    auto resultDim = [&](size_t i, unsigned k) {
      const auto &tf = ops_[i].rule.results;
      return k < tf.size() ? dimOfFactor(tf[k], factor[i]) : -1;
    };
    auto localIndex = [&](Operation *op) -> int {
      auto it = index_.find(op);
      return it != index_.end() && factor[it->second] >= 0 ? it->second : -1;
    };
    // Whether result k of local op i, split, is read whole by some op (it leaves the region).
    auto leaves = [&](size_t i, unsigned k) {
      return llvm::any_of(ops_[i].op->getResult(k).getUses(), [&](OpOperand &use) {
        int j = localIndex(use.getOwner());
        return j < 0 || operandDim(j, use.getOperandNumber()) < 0;
      });
    };
    // The local op that yields `v` split (its index), or -1: `v` is whole.
    auto splitProducer = [&](Value v) -> int {
      auto result = dyn_cast<OpResult>(v);
      int p = result ? localIndex(result.getOwner()) : -1;
      return p >= 0 && resultDim(p, result.getResultNumber()) >= 0 ? p : -1;
    };
    // Slices and collectives move floats: an integer or boolean value (token ids, a dropout's
    // mask) never enters or leaves a region. An op that would cut one, or hand one split to an
    // op outside, stays out, until no such op is left.
    auto isFloat = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getElementType().isF32();
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < ops_.size(); ++i) {
        if (factor[i] < 0)
          continue;
        bool crosses = false;
        for (auto [k, v] : llvm::enumerate(ops_[i].op->getOperands())) {
          if (operandDim(i, k) < 0 || isFloat(v))
            continue;
          crosses = crosses || splitProducer(v) < 0;
        }
        for (unsigned k = 0; k < ops_[i].op->getNumResults(); ++k)
          crosses = crosses || (resultDim(i, k) >= 0 && !isFloat(ops_[i].op->getResult(k)) &&
                                leaves(i, k));
        if (crosses) {
          factor[i] = -1;
          changed = true;
        }
      }
    }
    // An op whose split results all leave the region is better computed on whole operands
    // when it would all-gather more than they hold: when its split operands leave anyway (the
    // transpose of a norm's output for a weight gradient), or when its results are larger
    // (a replicated projection of q, k and v from one normalised input).
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < ops_.size(); ++i) {
        if (factor[i] < 0)
          continue;
        bool resultsLeave = true, anyOperand = false;
        int64_t leaving = 0, staying = 0;
        for (unsigned k = 0; k < ops_[i].op->getNumResults(); ++k)
          if (resultDim(i, k) >= 0) {
            resultsLeave = resultsLeave && leaves(i, k);
            leaving += elementsOf(ops_[i].op->getResult(k));
          }
        llvm::DenseSet<Value> counted;
        for (auto [k, v] : llvm::enumerate(ops_[i].op->getOperands())) {
          if (operandDim(i, k) < 0 || !counted.insert(v).second)
            continue;
          anyOperand = true;
          int p = splitProducer(v);
          if (p < 0 || !leaves(p, cast<OpResult>(v).getResultNumber()))
            staying += elementsOf(v);
        }
        if (resultsLeave && anyOperand && (leaving > staying || (pruneTies && leaving == staying))) {
          factor[i] = -1;
          changed = true;
        }
      }
    }
    // Regions: local ops linked by a split value one yields and another reads split.
    std::vector<int> parent(ops_.size());
    std::iota(parent.begin(), parent.end(), 0);
    std::function<int(int)> find = [&](int x) {
      return parent[x] == x ? x : parent[x] = find(parent[x]);
    };
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (factor[i] < 0)
        continue;
      for (auto [k, v] : llvm::enumerate(ops_[i].op->getResults())) {
        if (resultDim(i, k) < 0)
          continue;
        for (OpOperand &use : v.getUses()) {
          int j = localIndex(use.getOwner());
          if (j >= 0 && operandDim(j, use.getOperandNumber()) >= 0)
            parent[find(static_cast<int>(i))] = find(j);
        }
      }
    }
    struct Region {
      int64_t scattered = 0, gathered = 0, split = 0, slices = 0, scatters = 0, gathers = 0;
    };
    std::map<int, Region> regions;
    std::set<std::pair<int, void *>> entered; // (region, value): one collective or slice each
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (factor[i] < 0)
        continue;
      Region &region = regions[find(static_cast<int>(i))];
      for (auto [k, v] : llvm::enumerate(ops_[i].op->getOperands())) {
        if (operandDim(i, k) < 0)
          continue;
        if (splitProducer(v) >= 0)
          continue; // split already
        if (!entered.insert({find(static_cast<int>(i)), v.getAsOpaquePointer()}).second)
          continue;
        if (pendingOnTp(v)) {
          region.scattered += elementsOf(v);
          ++region.scatters;
        } else {
          ++region.slices;
        }
      }
      for (auto [k, v] : llvm::enumerate(ops_[i].op->getResults())) {
        if (resultDim(i, k) < 0)
          continue;
        region.split += elementsOf(v);
        if (leaves(i, k)) {
          region.gathered += elementsOf(v);
          ++region.gathers;
        }
      }
    }
    std::set<int> kept;
    for (auto &[root, r] : regions) {
      if (r.scattered == 0) {
        ++c.rejectedRegions;
        continue;
      }
      kept.insert(root);
      ++c.regions;
      c.splitElements += r.split;
      c.scatteredElements += r.scattered;
      c.gatheredElements += r.gathered;
      c.scatters += r.scatters;
      c.gathers += r.gathers;
      c.slices += r.slices;
    }
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (factor[i] < 0 || !kept.count(find(static_cast<int>(i))))
        continue;
      c.localOps[ops_[i].op] = factor[i];
      for (auto [k, v] : llvm::enumerate(ops_[i].op->getResults()))
        if (int d = resultDim(i, k); d >= 0)
          c.splitValues.push_back({v, d});
    }
    return c;
  }

  // "dim D of input 'NAME' (size N)", else of the first value in the class.
  std::string label(int cls) const {
    const DimClass &info = dc_.info(cls);
    for (const DimRef &m : info.members)
      if (auto arg = dyn_cast<BlockArgument>(m.value))
        if (auto name = func_.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kInputAttr))
          return "dim " + std::to_string(m.dim) + " of input '" + name.str() + "' (size " +
                 std::to_string(cast<RankedTensorType>(m.value.getType()).getDimSize(m.dim)) +
                 ")";
    const DimRef &m = info.members.front();
    std::string where = m.value.getDefiningOp() ? nodeName(m.value.getDefiningOp()) : "an argument";
    return "dim " + std::to_string(m.dim) + " of the result of " + where + " (size " +
           std::to_string(info.unit) + ")";
  }

private:
  mutable func::FuncOp func_;
  const DimensionClasses &dc_;
  const std::vector<int> &classAxis_;
  int64_t tp_;
  std::vector<RuledOp> ops_;
  llvm::DenseMap<Operation *, int> index_;
  mutable llvm::DenseMap<Value, bool> pending_;
};

} // namespace

LogicalResult chooseSequenceParallel(func::FuncOp func, const DimensionClasses &dc, int batch,
                                     const std::vector<int> &classAxis, int64_t tp,
                                     FlatSymbolRefAttr mesh,
                                     llvm::SmallVectorImpl<std::string> &notes) {
  Chooser chooser(func, dc, classAxis, tp);
  chooser.sumPendingTermsFirst(func);
  Candidate best;
  for (int c = 0; c < dc.numClasses(); ++c) {
    if (c == batch || classAxis[c] >= 0 || dc.info(c).unit % tp)
      continue;
    // The class that saves the most: the activation elements split (each device stores and
    // computes 1/t of them) less the elements all-gathered beyond those reduce-scattered in
    // place of all-reduces (each costs (t-1)/t of itself, as a split element saves). The
    // sequence wins over the model dimension: its regions leave only before attention and
    // the MLP, where the model dimension's leave before every norm, which needs it whole.
    // Of the two ways to cut a region's edges, the one that all-gathers less (ties: the one
    // that splits more).
    Candidate candidate = chooser.evaluate(c, false);
    Candidate pruned = chooser.evaluate(c, true);
    auto extraOf = [](const Candidate &k) { return k.gatheredElements - k.scatteredElements; };
    if (pruned.splitElements && extraOf(pruned) < extraOf(candidate))
      candidate = std::move(pruned);
    if (candidate.splitElements == 0)
      continue;
    auto score = [](const Candidate &k) {
      return k.splitElements - (k.gatheredElements - k.scatteredElements);
    };
    if (best.splitElements == 0 || score(candidate) > score(best))
      best = std::move(candidate);
  }
  if (best.splitElements == 0) {
    func.emitError("--strategy sp=1: no activation between the tensor-parallel blocks can be "
                   "split on tp: no region of ops that compute blocks of a dimension tp=")
        << tp << " divides is entered by a row-parallel product's partial sum (sequence "
        << "parallelism replaces such all-reduces)";
    return failure();
  }
  OpBuilder b(func.getContext());
  for (auto &[op, f] : best.localOps)
    op->setAttr(kSequenceFactorAttr, b.getI64IntegerAttr(f));
  for (const SplitDim &s : best.splitValues) {
    auto axes = splitAxes(s.value);
    axes[s.dim].push_back(1);
    setSharding(s.value, makeSharding(mesh, axes));
  }
  notes.push_back("sequence-parallel on tp " + chooser.label(best.cls) + ": " +
                  std::to_string(best.localOps.size()) + " ops compute blocks of it (regions: " +
                  std::to_string(best.regions) + ", activation elements split: " +
                  std::to_string(best.splitElements) + "); partial sums reduce-scattered in "
                  "place of all-reduces: " + std::to_string(best.scatters) + " (" +
                  std::to_string(best.scatteredElements) + " elements), values all-gathered: " +
                  std::to_string(best.gathers) + " (" + std::to_string(best.gatheredElements) +
                  " elements), replicated values sliced: " + std::to_string(best.slices));
  if (best.rejectedRegions)
    notes.push_back("sequence-parallel: regions left replicated, no partial sum entering them: " +
                    std::to_string(best.rejectedRegions));
  return success();
}

} // namespace shardc::sharding
