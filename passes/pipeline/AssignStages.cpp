//===- AssignStages.cpp - cut the forward pass into pipeline stages ----------------------===//
//
// Stages are contiguous runs of repeated layers (a transformer's blocks), so that one
// activation (the residual stream, and whatever else a layer reads from outside it) crosses
// each cut. The run lengths minimise the largest stage's FLOPs by dynamic programming over
// the layers; among equally balanced cuts the one with the fewest bytes crossing wins.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/pipeline/PipelinePasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ModuleUnit.h"
#include "shardc/Dialect/Graph/OpCost.h"
#include "shardc/Lowering/TensorBytes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace shardc {
#define GEN_PASS_DEF_ASSIGNSTAGES
#include "passes/pipeline/PipelinePasses.h.inc"

using namespace mlir;

namespace {

uint64_t flopsOf(Operation *op) {
  auto cost = dyn_cast<graph::CostOpInterface>(op);
  return cost ? cost.getFlops() : 0;
}

uint64_t valueBytes(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  return static_cast<uint64_t>(t.getNumElements()) * runtimeElementSize(t.getElementType());
}

// The best split of units [0, n) into `stages` runs: (largest stage cost, bytes crossing the
// cuts), lexicographically smallest. Returns the first unit of each stage.
std::vector<size_t> balancedCuts(const std::vector<uint64_t> &unitCost, uint64_t before,
                                 uint64_t after, const std::vector<uint64_t> &crossingBytes,
                                 size_t stages) {
  const size_t n = unitCost.size();
  std::vector<uint64_t> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + unitCost[i];
  using Score = std::pair<uint64_t, uint64_t>;
  const Score worst{std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max()};
  // best[k][j]: units [0, j) in k stages; from[k][j]: the first unit of the k-th stage.
  std::vector<std::vector<Score>> best(stages + 1, std::vector<Score>(n + 1, worst));
  std::vector<std::vector<size_t>> from(stages + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = {0, 0};
  for (size_t k = 1; k <= stages; ++k)
    for (size_t j = k; j <= n; ++j)
      for (size_t i = k - 1; i < j; ++i) {
        if (best[k - 1][i] == worst)
          continue;
        uint64_t cost = prefix[j] - prefix[i] + (k == 1 ? before : 0) + (j == n ? after : 0);
        Score s{std::max(best[k - 1][i].first, cost),
                best[k - 1][i].second + (i > 0 ? crossingBytes[i] : 0)};
        if (s < best[k][j]) {
          best[k][j] = s;
          from[k][j] = i;
        }
      }
  std::vector<size_t> starts(stages);
  size_t j = n;
  for (size_t k = stages; k >= 1; --k) {
    starts[k - 1] = from[k][j];
    j = from[k][j];
  }
  return starts;
}

struct AssignStagesPass : impl::AssignStagesBase<AssignStagesPass> {
  using AssignStagesBase::AssignStagesBase;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function to cut into pipeline stages");
      return signalPassFailure();
    }
    if (stages < 1) {
      forward.emitError("pipeline stages must be at least 1, got ")
          << static_cast<int64_t>(stages);
      return signalPassFailure();
    }
    Block &body = forward.getBody().front();
    std::vector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    llvm::DenseMap<Operation *, size_t> position;
    for (size_t i = 0; i < ops.size(); ++i)
      position[ops[i]] = i;

    // The layers in the order they first appear, and each op's layer.
    std::vector<std::string> units;
    llvm::StringMap<size_t> unitIndex;
    std::vector<int64_t> unitOf(ops.size(), -1);
    std::vector<size_t> unitFirstOp;
    for (size_t i = 0; i < ops.size(); ++i) {
      std::string unit = graph::moduleUnitOf(ops[i]);
      if (unit.empty())
        continue;
      auto [it, added] = unitIndex.try_emplace(unit, units.size());
      if (added) {
        units.push_back(unit);
        unitFirstOp.push_back(i);
      }
      unitOf[i] = static_cast<int64_t>(it->second);
    }
    const size_t n = units.size();
    const int64_t v = virtualStages;
    if (v < 1 || stages % v != 0) {
      forward.emitError("--virtual-stages ")
          << v << " does not divide the " << static_cast<int64_t>(stages) << " stages";
      return signalPassFailure();
    }
    // Every rank holds v chunks of the layers: they must come out whole.
    if (v > 1 && static_cast<int64_t>(n) % v != 0) {
      forward.emitError("--virtual-stages ")
          << v << " does not divide the model's " << n << " repeated layers (each rank "
          << "holds " << v << " chunks of them)";
      return signalPassFailure();
    }
    if (static_cast<int64_t>(n) < stages) {
      forward.emitError("--strategy pp=")
          << static_cast<int64_t>(stages / v) << ": the model has " << n << " repeated layer"
          << (n == 1 ? "" : "s") << " (node names with a '.N' module, e.g. '/h.3/') to cut "
          << "between, fewer than the " << static_cast<int64_t>(stages)
          << (v > 1 ? " virtual stages (pp x --virtual-stages)" : " stages");
      return signalPassFailure();
    }


    // FLOPs per layer; ops outside the layers count for the stage before the first layer,
    // the last stage after the last layer, else the layer before them.
    std::vector<uint64_t> unitCost(n, 0);
    uint64_t before = 0, after = 0;
    int64_t lastUnit = -1;
    for (size_t i = 0; i < ops.size(); ++i) {
      uint64_t f = flopsOf(ops[i]);
      if (unitOf[i] >= 0)
        lastUnit = unitOf[i];
      if (unitOf[i] >= 0)
        unitCost[static_cast<size_t>(unitOf[i])] += f;
      else if (lastUnit < 0)
        before += f;
      else
        unitCost[static_cast<size_t>(lastUnit)] += f;
    }
    // Trailing ops after the last layer's last op go to `after` instead.
    size_t lastUnitOp = 0;
    for (size_t i = 0; i < ops.size(); ++i)
      if (unitOf[i] >= 0)
        lastUnitOp = i;
    for (size_t i = lastUnitOp + 1; i < ops.size(); ++i) {
      unitCost[static_cast<size_t>(lastUnit)] -= flopsOf(ops[i]);
      after += flopsOf(ops[i]);
    }

    // Bytes of the values made before a layer's first op and read at or after it.
    std::vector<uint64_t> crossing(n, 0);
    for (size_t u = 1; u < n; ++u) {
      size_t cut = unitFirstOp[u];
      for (size_t i = 0; i < cut; ++i) {
        if (isa<graph::ConstantOp>(ops[i]))
          continue;
        for (Value r : ops[i]->getResults())
          if (llvm::any_of(r.getUsers(), [&](Operation *user) {
                auto it = position.find(user);
                return it == position.end() || it->second >= cut;
              }))
            crossing[u] += valueBytes(r);
      }
    }

    std::vector<size_t> starts;
    if (!cuts.empty()) {
      if (static_cast<int64_t>(cuts.size()) != stages - 1) {
        forward.emitError("--pp-cuts: ")
            << cuts.size() << " prefix" << (cuts.size() == 1 ? "" : "es") << " for "
            << static_cast<int64_t>(stages) << " stages (give "
            << static_cast<int64_t>(stages) - 1 << ")";
        return signalPassFailure();
      }
      starts.push_back(0);
      for (const std::string &prefix : cuts) {
        size_t found = n;
        for (size_t u = 0; u < n && found == n; ++u)
          if (llvm::StringRef(units[u]).starts_with(prefix))
            found = u;
        if (found == n) {
          forward.emitError("--pp-cuts: '") << prefix << "' starts no repeated layer (the "
                                            << "layers are " << units.front() << " .. "
                                            << units.back() << ")";
          return signalPassFailure();
        }
        if (found <= starts.back()) {
          forward.emitError("--pp-cuts: '")
              << prefix << "' does not start a layer after the previous cut's";
          return signalPassFailure();
        }
        starts.push_back(found);
      }
    } else {
      starts = balancedCuts(unitCost, before, after, crossing, static_cast<size_t>(stages));
    }

    // The stage of each layer, then of each op: its layer's, else its latest operand's, else
    // (reading only arguments and constants) its earliest reader's; never earlier than an
    // operand's.
    std::vector<int64_t> unitStage(n, 0);
    for (size_t u = 0, k = 0; u < n; ++u) {
      while (k + 1 < starts.size() && u >= starts[k + 1])
        ++k;
      unitStage[u] = static_cast<int64_t>(k);
    }
    std::vector<int64_t> stageOf(ops.size(), -1);
    auto operandStage = [&](size_t i) {
      int64_t s = -1;
      for (Value v : ops[i]->getOperands())
        if (Operation *def = v.getDefiningOp(); def && position.count(def))
          s = std::max(s, stageOf[position[def]]);
      return s;
    };
    for (size_t i = 0; i < ops.size(); ++i)
      if (unitOf[i] >= 0)
        stageOf[i] = unitStage[static_cast<size_t>(unitOf[i])];
      else
        stageOf[i] = operandStage(i);
    // Ops of arguments and constants alone: their earliest reader's stage (readers come later
    // in the block, so one backward sweep settles chains of them).
    for (size_t i = ops.size(); i-- > 0;) {
      if (stageOf[i] >= 0)
        continue;
      int64_t s = -1;
      for (Operation *user : ops[i]->getUsers())
        if (auto it = position.find(user); it != position.end() && stageOf[it->second] >= 0)
          s = s < 0 ? stageOf[it->second] : std::min(s, stageOf[it->second]);
      stageOf[i] = s < 0 ? stages - 1 : s;
    }
    for (size_t i = 0; i < ops.size(); ++i)
      stageOf[i] = std::max(stageOf[i], operandStage(i));

    OpBuilder b(forward.getContext());
    std::vector<uint64_t> stageFlops(static_cast<size_t>(stages), 0);
    std::vector<size_t> stageOps(static_cast<size_t>(stages), 0);
    for (size_t i = 0; i < ops.size(); ++i) {
      ops[i]->setAttr(graph::kStageAttr, b.getI64IntegerAttr(stageOf[i]));
      stageFlops[static_cast<size_t>(stageOf[i])] += flopsOf(ops[i]);
      ++stageOps[static_cast<size_t>(stageOf[i])];
    }
    SmallVector<Attribute> lines;
    for (int64_t k = 0; k < stages; ++k) {
      size_t first = starts[static_cast<size_t>(k)];
      size_t last = k + 1 < stages ? starts[static_cast<size_t>(k) + 1] - 1 : n - 1;
      std::string line = "stage " + std::to_string(k) + ": layers " + units[first] +
                         (first == last ? "" : " .. " + units[last]) + " (" +
                         std::to_string(last - first + 1) + "), " +
                         std::to_string(stageOps[static_cast<size_t>(k)]) + " forward ops, " +
                         graph::flopsText(stageFlops[static_cast<size_t>(k)]) + " forward" +
                         (k == 0 ? (cuts.empty() ? "" : " (--pp-cuts)") : "");
      lines.push_back(b.getStringAttr(line));
    }
    forward->setAttr(graph::kStagesAttr, b.getArrayAttr(lines));
  }
};

} // namespace
} // namespace shardc
