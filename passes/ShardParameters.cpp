//===- ShardParameters.cpp - ZeRO stage 3 / FSDP ----------------------------------------===//
//
// Every rank stores only its flat shard of each trained parameter and of its optimizer state.
// Parameters are grouped into FSDP units (a transformer block, a module); a unit's whole
// parameters are all-gathered just before the forward pass first uses them and dropped after
// their last forward use, gathered again for the backward pass, and the unit's gradients are
// reduce-scattered as soon as they are final. While one unit computes, the next unit's
// all-gather is already issued (prefetch), in both passes. The optimizer updates shards, and
// the step returns shards: nothing is gathered after the update.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/DataParallel.h"
#include "passes/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

namespace shardc {
#define GEN_PASS_DEF_SHARDPARAMETERS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// The unit of a parameter without --fsdp-unit: the name up to its first numeric component
// ("h.3.attn.c_attn.weight" -> "h.3": the blocks of a repeated stack), else the name without
// its last component, the module that owns it ("fc1.weight" -> "fc1").
std::string automaticUnit(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (size_t i = 0; i < parts.size(); ++i)
    if (!parts[i].empty() && llvm::all_of(parts[i], [](char c) { return llvm::isDigit(c); }))
      return llvm::join(ArrayRef(parts).take_front(i + 1), ".");
  if (parts.size() <= 1)
    return name.str();
  return llvm::join(ArrayRef(parts).drop_back(), ".");
}

struct Unit {
  std::string name;
  SmallVector<dp::TrainedParam *> params;
};

// The first op among `users` in block order, or null.
Operation *firstOf(ArrayRef<Operation *> users) {
  Operation *first = nullptr;
  for (Operation *op : users)
    if (!first || op->isBeforeInBlock(first))
      first = op;
  return first;
}

struct ShardParametersPass : impl::ShardParametersBase<ShardParametersPass> {
  using ShardParametersBase::ShardParametersBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<dp::TrainStepView> analyzed = dp::analyzeTrainStep(func);
    if (failed(analyzed))
      return signalPassFailure();
    dp::TrainStepView &view = *analyzed;
    if (view.zeroStage != 3) {
      func.emitError("shard-parameters implements ZeRO stage 3, the step is placed for stage ")
          << view.zeroStage;
      return signalPassFailure();
    }
    std::optional<llvm::Regex> unitPattern;
    if (!fsdpUnit.empty()) {
      unitPattern.emplace(fsdpUnit);
      std::string why;
      if (!unitPattern->isValid(why)) {
        func.emitError("--fsdp-unit '") << fsdpUnit << "' is not a valid regular expression: "
                                        << why;
        return signalPassFailure();
      }
    }
    dp::allReduceLoss(view);
    StringRef mesh = view.mesh.getSymName();
    OpBuilder b(&getContext());

    // Units, in the order of the parameters' arguments for now.
    SmallVector<Unit> units;
    llvm::StringMap<size_t> unitIndex;
    for (dp::TrainedParam &p : view.params) {
      std::string unit;
      SmallVector<StringRef> match;
      if (unitPattern && unitPattern->match(p.name, &match))
        unit = match[0].str();
      else
        unit = unitPattern ? std::string("(rest)") : automaticUnit(p.name);
      auto [it, inserted] = unitIndex.try_emplace(unit, units.size());
      if (inserted)
        units.push_back({unit, {}});
      units[it->second].params.push_back(&p);
    }

    // Forward uses are those up to the loss; the backward pass follows it. The update is
    // neither: it works on the shard.
    auto usesIn = [&](dp::TrainedParam &p, bool forward) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : p.param.getUses()) {
        Operation *user = use.getOwner();
        if (user == p.update)
          continue;
        bool isForward = user == view.lossDef || user->isBeforeInBlock(view.lossDef);
        if (isForward == forward)
          uses.push_back(&use);
      }
      return uses;
    };

    // The backward pass often reads a value computed from a parameter alone in the forward
    // pass (a Linear's transposed weight). Keeping that alive would hold a whole copy of the
    // parameter from forward to backward, which is what sharding avoids: recompute it in the
    // backward pass from the parameter, which is gathered again there.
    for (dp::TrainedParam &p : view.params) {
      SmallVector<Operation *> derived;
      for (Operation *user : p.param.getUsers())
        if (user != p.update && user->isBeforeInBlock(view.lossDef) && isPure(user) &&
            llvm::all_of(user->getOperands(), [&](Value v) {
              return v == p.param || v.getDefiningOp<graph::ConstantOp>();
            }))
          derived.push_back(user);
      for (Operation *op : derived) {
        SmallVector<OpOperand *> late;
        Operation *first = nullptr;
        for (Value r : op->getResults())
          for (OpOperand &use : r.getUses())
            if (view.lossDef->isBeforeInBlock(use.getOwner())) {
              late.push_back(&use);
              if (!first || use.getOwner()->isBeforeInBlock(first))
                first = use.getOwner();
            }
        if (late.empty())
          continue;
        b.setInsertionPoint(first);
        Operation *again = b.clone(*op);
        for (OpOperand *use : late)
          use->set(again->getResult(cast<OpResult>(use->get()).getResultNumber()));
      }
    }

    // Gathers for one pass: units ordered by their first use; unit i's gather is issued just
    // before unit i-1's first use (prefetch), unit 0's just before its own.
    auto gatherFor = [&](bool forward) {
      struct Pending {
        Unit *unit;
        Operation *firstUse;
        SmallVector<dp::TrainedParam *> params;
      };
      SmallVector<Pending> pending;
      for (Unit &u : units) {
        Pending pu{&u, nullptr, {}};
        SmallVector<Operation *> users;
        for (dp::TrainedParam *p : u.params) {
          auto uses = usesIn(*p, forward);
          if (uses.empty())
            continue;
          pu.params.push_back(p);
          for (OpOperand *use : uses)
            users.push_back(use->getOwner());
        }
        pu.firstUse = firstOf(users);
        if (pu.firstUse)
          pending.push_back(std::move(pu));
      }
      llvm::stable_sort(pending, [](const Pending &a, const Pending &c) {
        return a.firstUse->isBeforeInBlock(c.firstUse);
      });
      for (size_t i = 0; i < pending.size(); ++i) {
        Pending &pu = pending[i];
        // Collect the uses before inserting, so that the gather's own operands are not uses.
        SmallVector<SmallVector<OpOperand *>> uses;
        SmallVector<Value> shards;
        SmallVector<Type> wholeTypes;
        for (dp::TrainedParam *p : pu.params) {
          uses.push_back(usesIn(*p, forward));
          shards.push_back(p->param);
          wholeTypes.push_back(p->update->getResult(0).getType());
        }
        b.setInsertionPoint(pending[i == 0 ? 0 : i - 1].firstUse);
        auto gather = b.create<graph::AllGatherOp>(
            NameLoc::get(b.getStringAttr((forward ? "forward/" : "backward/") + pu.unit->name),
                         func.getLoc()),
            wholeTypes, mesh, shards, IntegerAttr(), b.getStringAttr(pu.unit->name), view.dpAxes);
        for (auto [useList, whole] : llvm::zip(uses, gather.getResults()))
          for (OpOperand *use : useList)
            use->set(whole);
      }
    };
    // Whole types are taken from the update's result, which still has the parameter's type.
    gatherFor(/*forward=*/true);
    gatherFor(/*forward=*/false);

    // Gradients: one reduce-scatter per unit, as soon as the unit's gradients are final.
    llvm::DenseMap<Value, Value> gradShard;
    for (Unit &u : units) {
      SmallVector<Value> grads;
      SmallVector<Type> shardTypes;
      for (dp::TrainedParam *p : u.params) {
        grads.push_back(p->grad);
        shardTypes.push_back(dp::flatShardType(p->grad.getType(), view.ranks));
      }
      b.setInsertionPointAfter(dp::lastDefinition(grads));
      auto scatter = b.create<graph::ReduceScatterOp>(
          NameLoc::get(b.getStringAttr("gradients/" + u.name), func.getLoc()), shardTypes, mesh,
          grads, IntegerAttr(), b.getStringAttr(u.name), view.dpAxes);
      for (auto [g, s] : llvm::zip(grads, scatter.getResults()))
        gradShard[g] = s;
    }

    // Shards everywhere in the optimizer; the step takes and returns shards.
    dp::keepParameterShards(view, gradShard);
  }
};

} // namespace
} // namespace shardc
