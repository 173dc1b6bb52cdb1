//===- ShardParameters.cpp - ZeRO stage 3 / FSDP ----------------------------------------===//
//
// Every rank stores only its flat shard of each trained parameter and of its optimizer state.
// Parameters are grouped into FSDP units (a transformer block, a module); a unit's whole
// parameters are all-gathered just before the forward pass first uses them and dropped after
// their last forward use, gathered again for the backward pass, and the unit's gradients are
// reduce-scattered as soon as they are final. While one unit computes, the next unit's
// all-gather is already issued (prefetch), in both passes. With microbatches
// (shardc-micro-batches) each microbatch's forward and backward pass gathers again, as FSDP
// does: whole parameters never live across the microbatch loop. The optimizer updates shards,
// and the step returns shards: nothing is gathered after the update.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/dataparallel/DataParallel.h"
#include "passes/dataparallel/DataParallelPasses.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#include <map>
#include <set>

namespace shardc {
#define GEN_PASS_DEF_SHARDPARAMETERS
#include "passes/dataparallel/DataParallelPasses.h.inc"

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

// The stretches of the step through which a gathered parameter lives, numbered in the order
// they start: the forward pass (up to and including the loss) and the backward pass; with
// microbatches, those of each microbatch (2k and 2k + 1). A microbatch's clones carry its index
// (graph.micro_batch); its forward pass ends at its own loss, one of the values the step's
// loss adds up. An op outside the loop that reads a parameter (a copy made once) belongs to
// the stretch of the next op that has one.
class PassSegments {
public:
  PassSegments(Block &block, Operation *lossDef) : lossDef(lossDef) {
    llvm::DenseMap<int64_t, Operation *> lossOf;
    SmallVector<Operation *> work{lossDef};
    llvm::DenseSet<Operation *> seen{lossDef};
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (auto k = op->getAttrOfType<IntegerAttr>(graph::kMicroBatchAttr)) {
        Operation *&loss = lossOf[k.getInt()];
        if (!loss || loss->isBeforeInBlock(op))
          loss = op;
        continue;
      }
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); def && seen.insert(def).second)
          work.push_back(def);
    }
    if (lossOf.empty())
      return;
    int64_t last = 0;
    for (auto &entry : lossOf)
      last = std::max(last, entry.first);
    int next = 2 * static_cast<int>(last) + 1;
    for (Operation &op : llvm::reverse(block)) {
      auto k = op.getAttrOfType<IntegerAttr>(graph::kMicroBatchAttr);
      if (!k) {
        segment[&op] = next;
        continue;
      }
      auto loss = lossOf.find(k.getInt());
      if (loss == lossOf.end()) {
        // A microbatch whose loss is not found: fall back to one forward and one backward
        // pass for the whole step.
        segment.clear();
        return;
      }
      next = 2 * static_cast<int>(k.getInt()) +
             (&op == loss->second || op.isBeforeInBlock(loss->second) ? 0 : 1);
      segment[&op] = next;
    }
  }

  // The stretch of `op`, a reader of a parameter.
  int of(Operation *op) const {
    auto it = segment.find(op);
    if (it != segment.end())
      return it->second;
    return op == lossDef || op->isBeforeInBlock(lossDef) ? 0 : 1;
  }
  void add(Operation *op, int s) { segment[op] = s; }

  // "forward/h.0" or, with microbatches, "forward/mb1/h.0".
  std::string name(int s, StringRef unit) const {
    std::string pass = s % 2 == 0 ? "forward/" : "backward/";
    if (segment.empty())
      return pass + unit.str();
    return pass + "mb" + std::to_string(s / 2) + "/" + unit.str();
  }

private:
  Operation *lossDef;
  llvm::DenseMap<Operation *, int> segment; // empty without microbatches
};

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

    PassSegments segments(func.getBody().front(), view.lossDef);
    // The uses of a parameter in one stretch (forward or backward pass). The update reads
    // neither: it works on the shard.
    auto usesIn = [&](dp::TrainedParam &p, int segment) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : p.param.getUses())
        if (use.getOwner() != p.update && segments.of(use.getOwner()) == segment)
          uses.push_back(&use);
      return uses;
    };

    // The backward pass often reads a value computed from a parameter alone in the forward
    // pass (a Linear's transposed weight). Keeping that alive would hold a whole copy of the
    // parameter from forward to backward, which is what sharding avoids: recompute it in each
    // later stretch that reads it from the parameter, which is gathered again there.
    std::set<int> used;
    for (dp::TrainedParam &p : view.params) {
      SmallVector<Operation *> derived;
      for (Operation *user : p.param.getUsers()) {
        if (user == p.update)
          continue;
        used.insert(segments.of(user));
        if (isPure(user) && llvm::all_of(user->getOperands(), [&](Value v) {
              return v == p.param || v.getDefiningOp<graph::ConstantOp>();
            }))
          derived.push_back(user);
      }
      for (Operation *op : derived) {
        int own = segments.of(op);
        std::map<int, SmallVector<OpOperand *>> elsewhere;
        for (Value r : op->getResults())
          for (OpOperand &use : r.getUses())
            if (int s = segments.of(use.getOwner()); s != own)
              elsewhere[s].push_back(&use);
        for (auto &[segment, uses] : elsewhere) {
          Operation *first = uses.front()->getOwner();
          for (OpOperand *use : uses)
            if (use->getOwner()->isBeforeInBlock(first))
              first = use->getOwner();
          b.setInsertionPoint(first);
          Operation *again = b.clone(*op);
          segments.add(again, segment);
          used.insert(segment);
          for (OpOperand *use : uses)
            use->set(again->getResult(cast<OpResult>(use->get()).getResultNumber()));
        }
      }
    }

    // Gathers for one stretch: units ordered by their first use; unit i's gather is issued
    // just before unit i-1's first use (prefetch), unit 0's just before its own.
    auto gatherFor = [&](int segment) {
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
          auto uses = usesIn(*p, segment);
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
          uses.push_back(usesIn(*p, segment));
          shards.push_back(p->param);
          wholeTypes.push_back(p->update->getResult(0).getType());
        }
        b.setInsertionPoint(pending[i == 0 ? 0 : i - 1].firstUse);
        auto gather = b.create<graph::AllGatherOp>(
            NameLoc::get(b.getStringAttr(segments.name(segment, pu.unit->name)), func.getLoc()),
            wholeTypes, mesh, shards, IntegerAttr(), b.getStringAttr(pu.unit->name), view.dpAxes);
        for (auto [useList, whole] : llvm::zip(uses, gather.getResults()))
          for (OpOperand *use : useList)
            use->set(whole);
      }
    };
    // Whole types are taken from the update's result, which still has the parameter's type.
    for (int segment : used)
      gatherFor(segment);

    // Gradients: one reduce-scatter per unit, as soon as the unit's gradients are final; a
    // gradient the partitioner already made whole is sliced instead (no communication).
    llvm::DenseMap<Value, Value> gradShard;
    SmallVector<Value> pendingGrads, wholeGrads;
    dp::splitPendingGradients(view, pendingGrads, wholeGrads);
    if (!wholeGrads.empty()) {
      b.setInsertionPoint(dp::firstOptimizerOp(view));
      SmallVector<Type> shardTypes;
      for (Value g : wholeGrads)
        shardTypes.push_back(dp::flatShardType(g.getType(), view.ranks));
      auto slice = b.create<graph::ShardSliceOp>(
          NameLoc::get(b.getStringAttr("gradients/whole/shard_slice"), func.getLoc()), shardTypes,
          mesh, wholeGrads, IntegerAttr(), StringAttr(), view.dpAxes);
      for (auto [g, s] : llvm::zip(wholeGrads, slice.getResults()))
        gradShard[g] = s;
    }
    for (Unit &u : units) {
      SmallVector<Value> grads;
      SmallVector<Type> shardTypes;
      for (dp::TrainedParam *p : u.params) {
        if (gradShard.count(p->grad))
          continue;
        grads.push_back(p->grad);
        shardTypes.push_back(dp::flatShardType(p->grad.getType(), view.ranks));
      }
      if (grads.empty())
        continue;
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
