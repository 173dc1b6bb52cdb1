//===- Remat.cpp - recompute forward values in the backward pass instead of keeping them -===//
//
// The backward pass reads values the forward pass computed (activations saved for it); they
// are live from the forward to the backward pass, which is where a training step's activation
// memory goes. Recomputation keeps fewer of them: a group of forward ops is computed again,
// by clones of the same ops on the same operands, right before the first backward op that
// reads any of the group's saved values, and the backward pass reads the clones. The originals
// then die after their last forward use. The clones run the same kernels on the same inputs,
// so what they compute is bit-identical (a training dropout's mask is keyed on seed, step,
// stream and element, so its clone draws the same mask).
//
// Groups:
//   full       each unit (a repeated module: the node-name prefix up to its first component
//              that ends in ".N", e.g. "/transformer/h.3"): everything the unit computes is
//              recomputed from what it reads from outside (its input, the parameters), so of a
//              unit only its input is kept.
//   selective  each attention core: a product of two activations (scores = Q K^T, a x s x s
//              per row) and the ops after it that keep its size (scale, mask, softmax,
//              dropout), read by another product of two activations (the probabilities times
//              V). These are the memory-heavy and cheap values (Megatron's 5 a s^2 b term);
//              Q, K and V stay.
//
// Records on the function `graph.remat`: one line per unit (or attention core) saying what
// it keeps for the backward pass without recomputation, what the mode recomputes, and the
// recomputed matrix-product FLOPs, for plan.txt.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/precision/PrecisionPasses.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ModuleUnit.h"
#include "shardc/Lowering/Signature.h"
#include "shardc/Lowering/TensorBytes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <string>

namespace shardc {
#define GEN_PASS_DEF_REMAT
#include "passes/precision/PrecisionPasses.h.inc"

using namespace mlir;

namespace {

// The unit an op belongs to (ModuleUnit.h).
std::string unitOf(Operation *op) { return graph::moduleUnitOf(op); }

int64_t numel(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t.getNumElements() : -1;
}

int64_t bytesOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  return t.getNumElements() * static_cast<int64_t>(runtimeElementSize(t.getElementType()));
}

// Multiply-adds x 2 of a matrix product or a fused attention's two (0 for other ops): what
// recomputing it costs.
int64_t productFlops(Operation *op) {
  if (auto mm = dyn_cast<graph::MatMulOp>(op))
    return 2 * numel(mm.getResult()) * mm.contractedSize();
  if (auto gemm = dyn_cast<graph::GemmOp>(op)) {
    auto a = cast<RankedTensorType>(gemm.getOperand(0).getType());
    int64_t k = gemm.getTransA() ? a.getDimSize(0) : a.getDimSize(1);
    return 2 * numel(gemm->getResult(0)) * k;
  }
  if (auto attention = dyn_cast<graph::AttentionOp>(op)) {
    // [..., S, D]·[..., D, Sk] is 2·(q's elements)·Sk; [..., S, Sk]·[..., Sk, Dv] is
    // 2·(output's elements)·Sk.
    auto k = cast<RankedTensorType>(attention.getK().getType());
    const int64_t keys = k.getDimSize(k.getRank() - 2);
    return 2 * (numel(attention.getQ()) + numel(attention.getOutput())) * keys;
  }
  return 0;
}

struct RematPass : impl::RematBase<RematPass> {
  using RematBase::RematBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (mode == "none")
      return;
    if (mode != "full" && mode != "selective") {
      func.emitError("--remat '") << mode.getValue() << "': expected none, full or selective";
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    Operation *ret = block.getTerminator();
    Operation *lossDef = nullptr;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (resultName(func, i) == kLossName)
        lossDef = ret->getOperand(i).getDefiningOp();
    if (!lossDef)
      return;
    lossDef_ = lossDef;

    // The forward pass: the ops the loss is computed from.
    forward_.clear();
    clones_.clear();
    activation_.clear();
    SmallVector<Operation *> stack{lossDef};
    while (!stack.empty()) {
      Operation *op = stack.pop_back_val();
      if (op->getBlock() != &block || !forward_.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          stack.push_back(def);
    }
    // Values that depend on a graph input (activations), as opposed to parameters and
    // constants.
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), graph::kInputAttr))
        activation_.insert(arg);
    for (Operation &op : block)
      if (llvm::any_of(op.getOperands(), [&](Value v) { return activation_.count(v); }))
        for (Value r : op.getResults())
          activation_.insert(r);

    // With `units` = k >= 0, only the first k units (in forward order) take the mode; the
    // rest take the next lighter one (full -> selective -> none).
    llvm::MapVector<StringRef, SmallVector<Operation *>> groups, unitGroups;
    std::vector<std::string> names, unitNames; // own the group names
    collectUnits(block, unitGroups, unitNames);
    const int64_t numUnits = static_cast<int64_t>(unitNames.size());
    const int64_t limit = units < 0 ? numUnits : std::min<int64_t>(units, numUnits);
    llvm::StringMap<int64_t> unitIndex;
    for (auto [i, name] : llvm::enumerate(unitNames))
      unitIndex[name] = static_cast<int64_t>(i);
    // Whether an attention core in `unit` ("" for none) is recomputed.
    auto selectiveCore = [&](StringRef unit) {
      auto it = unitIndex.find(unit);
      int64_t index = it == unitIndex.end() ? numUnits : it->second;
      return mode == "full" ? index >= limit : (units < 0 || index < limit);
    };
    if (mode == "full")
      for (auto &[name, ops] : unitGroups)
        if (unitIndex[name] < limit)
          groups[name] = ops;
    if (mode == "selective" || limit < numUnits)
      collectAttentionCores(block, groups, names, selectiveCore);

    SmallVector<std::string> report;
    int64_t totalFlops = 0, totalBytes = 0, recomputedOps = 0, unitCount = 0, coreCount = 0;
    for (auto &[name, ops] : groups) {
      GroupResult r = recompute(ops);
      if (r.ops == 0)
        continue;
      ++(unitIndex.count(name) ? unitCount : coreCount);
      totalFlops += r.flops;
      totalBytes += r.recomputedBytes;
      recomputedOps += r.ops;
      report.push_back(name.str() + ": keeps " + std::to_string(r.keptBytes) +
                       " bytes for the backward pass without recomputation; recomputes " +
                       std::to_string(r.recomputedBytes) + " bytes of them (" +
                       std::to_string(r.ops) + " ops, " + std::to_string(r.flops) +
                       " matrix-product FLOPs)");
    }
    OpBuilder b(func.getContext());
    std::string what = mode.getValue();
    if (limit < numUnits)
      what += " for the first " + std::to_string(limit) + " of " + std::to_string(numUnits) +
              " units, " + (mode == "full" ? "selective" : "none") + " for the rest";
    std::string counted;
    if (mode == "full")
      counted = std::to_string(unitCount) + " units";
    if (mode == "selective" || limit < numUnits)
      counted += (counted.empty() ? "" : " and ") + std::to_string(coreCount) +
                 " attention cores";
    report.insert(report.begin(),
                  what + ": " + counted + ", " +
                      std::to_string(recomputedOps) + " ops recomputed in the backward pass, " +
                      std::to_string(totalBytes) + " bytes of saved activations recomputed, " +
                      std::to_string(totalFlops) +
                      " matrix-product FLOPs more per step (whole batch)");
    SmallVector<StringRef> refs(report.begin(), report.end());
    func->setAttr(graph::kRematAttr, b.getStrArrayAttr(refs));
    func->setAttr(graph::kRematUnitsAttr, b.getI64IntegerAttr(numUnits));
  }

  // full: the forward ops of each unit.
  void collectUnits(Block &block, llvm::MapVector<StringRef, SmallVector<Operation *>> &groups,
                    std::vector<std::string> &names) {
    llvm::StringMap<unsigned> index;
    names.reserve(forward_.size());
    SmallVector<std::pair<unsigned, Operation *>> members;
    for (Operation &op : block) {
      if (!forward_.count(&op))
        continue;
      std::string unit = unitOf(&op);
      if (unit.empty())
        continue;
      auto [it, inserted] = index.try_emplace(unit, static_cast<unsigned>(names.size()));
      if (inserted)
        names.push_back(unit);
      members.push_back({it->second, &op});
    }
    for (const std::string &n : names)
      groups[n];
    for (auto &[i, op] : members)
      groups[names[i]].push_back(op);
  }

  // selective: each product of two activations and the ops after it that keep its size, when
  // another product of two activations reads them.
  void collectAttentionCores(Block &block,
                             llvm::MapVector<StringRef, SmallVector<Operation *>> &groups,
                             std::vector<std::string> &names,
                             llvm::function_ref<bool(StringRef unit)> wanted) {
    llvm::DenseSet<Operation *> taken;
    names.reserve(forward_.size());
    for (Operation &op : block) {
      auto mm = dyn_cast<graph::MatMulOp>(op);
      if (!mm || !forward_.count(&op) || taken.count(&op) ||
          !activation_.count(mm.getOperand(0)) || !activation_.count(mm.getOperand(1)))
        continue;
      int64_t size = numel(mm.getResult());
      SmallVector<Operation *> core{&op};
      // Forward through the ops of the same size (in block order: users come later).
      llvm::DenseSet<Value> inCore{mm.getResult()};
      for (Operation *next = op.getNextNode(); next; next = next->getNextNode()) {
        if (!forward_.count(next) || taken.count(next) ||
            isa<graph::MatMulOp, graph::GemmOp>(next) ||
            !llvm::any_of(next->getOperands(), [&](Value v) { return inCore.count(v); }) ||
            !llvm::all_of(next->getResults(), [&](Value r) { return numel(r) == size; }))
          continue;
        core.push_back(next);
        for (Value r : next->getResults())
          inCore.insert(r);
      }
      // The scores are a core when another product of two activations reads them (the
      // probabilities times V); a product of activations that feeds none is not attention.
      bool attention = llvm::any_of(inCore, [&](Value v) {
        return llvm::any_of(v.getUsers(), [&](Operation *u) {
          auto next = dyn_cast<graph::MatMulOp>(u);
          return next && forward_.count(u) && activation_.count(next.getOperand(0)) &&
                 activation_.count(next.getOperand(1));
        });
      });
      if (!attention)
        continue;
      taken.insert(core.begin(), core.end());
      std::string unit = unitOf(&op);
      if (!wanted(unit))
        continue;
      names.push_back((unit.empty() ? std::string("(no unit)") : unit) + " attention core " +
                      std::to_string(names.size()));
      groups[names.back()] = std::move(core);
    }
  }

  struct GroupResult {
    int64_t ops = 0, flops = 0, keptBytes = 0, recomputedBytes = 0;
  };

  // Recomputes the values of `group` (forward ops, in block order) that the backward pass
  // reads, from what the group reads from outside, right before the first backward op that
  // reads one.
  GroupResult recompute(ArrayRef<Operation *> group) {
    GroupResult result;
    llvm::DenseSet<Operation *> members(group.begin(), group.end());
    // The backward pass: ops after the loss (an op before it that the loss does not need, such
    // as a BatchNorm's running-statistics update, is part of the forward pass). Recomputations
    // of other groups read the forward values themselves (a unit's input is kept for the
    // next unit's recomputation).
    auto isBackwardUse = [&](OpOperand &use) {
      Operation *owner = use.getOwner();
      return !forward_.count(owner) && !clones_.count(owner) && lossDef_->isBeforeInBlock(owner);
    };
    // Under pipeline stages a backward reader on another stage than the value's (a unit's
    // output read by the next unit's backward, across a cut) keeps reading the forward value,
    // which reaches its stage with the forward pass; a clone would be made on the stage that
    // runs its backward later.
    auto sameStage = [](Operation *a, Operation *b) {
      return a->getAttr(graph::kStageAttr) == b->getAttr(graph::kStageAttr);
    };
    auto isRecomputedUse = [&](OpOperand &use) {
      return isBackwardUse(use) && sameStage(use.get().getDefiningOp(), use.getOwner());
    };
    llvm::SetVector<Value> saved;
    Operation *first = nullptr;
    for (Operation *op : group) {
      // Constants live in the weights region: nothing to save or recompute.
      if (op->getNumOperands() == 0)
        continue;
      for (Value r : op->getResults())
        for (OpOperand &use : r.getUses())
          if (isRecomputedUse(use)) {
            saved.insert(r);
            if (!first || use.getOwner()->isBeforeInBlock(first))
              first = use.getOwner();
          }
    }
    for (Value v : saved)
      result.keptBytes += bytesOf(v);
    if (saved.empty())
      return result;
    // The ops of the group the saved values need.
    llvm::DenseSet<Operation *> needed;
    SmallVector<Operation *> stack;
    for (Value v : saved)
      stack.push_back(v.getDefiningOp());
    while (!stack.empty()) {
      Operation *op = stack.pop_back_val();
      if (!members.count(op) || op->getNumOperands() == 0 || !needed.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          stack.push_back(def);
    }
    OpBuilder b(first);
    IRMapping map;
    for (Operation *op : group) {
      if (!needed.count(op))
        continue;
      Operation *clone = b.clone(*op, map);
      clone->setLoc(graph::suffixedLoc(op->getLoc(), "/remat"));
      clones_.insert(clone);
      ++result.ops;
      result.flops += productFlops(op);
    }
    for (Value v : saved) {
      result.recomputedBytes += bytesOf(v);
      v.replaceUsesWithIf(map.lookup(v), isRecomputedUse);
    }
    return result;
  }

  Operation *lossDef_ = nullptr;
  llvm::DenseSet<Operation *> forward_;
  llvm::DenseSet<Operation *> clones_;
  llvm::DenseSet<Value> activation_;
};

} // namespace
} // namespace shardc
