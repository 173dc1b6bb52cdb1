//===- FuseElementwise.cpp - chains of elementwise ops as one kernel --------------------===//
//
// Unfused, every elementwise op reads its operands from memory and writes its result back:
// the erf GELU of an export (Div, Erf, Add, Mul, Mul) moves five tensors in and five out where
// one in and one out would do, and under 16-bit storage every product is followed and
// preceded by a cast that is a pass of its own. On both CPUs and GPUs these ops take their
// time from the memory traffic, so a chain computed element by element in one kernel
// (graph.fused_elementwise) costs what its inputs and outputs cost.
//
// Runs on one device's program after the sharding, pipeline and precision passes, before the
// memory planner (which then plans the fused program). Walking the ops in program order, an
// elementwise op on f32 values (neg ... softplus, add, sub, mul, div, pow, max, min; a cast
// between f32, bf16 and f16) joins the group of an operand's producer when
//   - its result has the group's shape (its other operands broadcast to it),
//   - every value of the group read outside it is read after the op (the fused op takes the
//     op's place, so nothing may need a group value sooner),
//   - it is in the same part of the step as the group: forward pass or not, recomputed
//     (remat) or not, the same repeated unit (a transformer layer), the same attributes the
//     scheduling passes put on ops (microbatch, stage), so that what reads the program by op
//     (the cost model, the pipeline schedule) sees the same parts;
//   - it is at most kWindow ops after the group's first op: a group spread further would keep
//     its inputs alive across the ops between;
//   - the group stays within the kernel's limits (steps, inputs).
// An op with operands from several groups merges them when it may join each. A group of one
// op stays as it is. Values a group computes and others read become its outputs, in their
// types (a 16-bit output stores the rounded value exactly).
//
// Exact: the kernel computes each step as the replaced op's kernel does (the same f32 function
// per element), and a cast to a 16-bit type rounds within the chain as the cast did.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/fusion/FusionPasses.h"

#include "shardc/Dialect/Graph/ForwardPass.h"
#include "shardc/Dialect/Graph/FusedSteps.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ModuleUnit.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <limits>
#include <memory>

namespace shardc {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/fusion/FusionPasses.h.inc"

namespace {

using namespace mlir;

constexpr int64_t kWindow = 48;   // ops from a group's first to its last
constexpr size_t kMaxInputs = 16; // operands of one fused op

bool isHalfOrF32(Type t) { return t.isF32() || t.isBF16() || t.isF16(); }

RankedTensorType staticTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t : RankedTensorType();
}

// Whether `op` can be a step (or, for a cast between float types, a rounding or nothing).
bool isFusible(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return false;
  RankedTensorType result = staticTensor(op->getResult(0));
  if (!result || result.getNumElements() == 0)
    return false;
  if (auto castOp = dyn_cast<graph::CastOp>(op)) {
    RankedTensorType in = staticTensor(castOp.getInput());
    return in && isHalfOrF32(in.getElementType()) && isHalfOrF32(result.getElementType()) &&
           in.getShape() == result.getShape();
  }
  const llvm::StringRef name = op->getName().stripDialect();
  const int arity = graph::fusedStepArity(name);
  if (arity == 0 || name.starts_with("round_") ||
      static_cast<int>(op->getNumOperands()) != arity)
    return false;
  if (!result.getElementType().isF32())
    return false;
  for (Value v : op->getOperands()) {
    RankedTensorType t = staticTensor(v);
    if (!t || !t.getElementType().isF32())
      return false;
  }
  return true;
}

// The steps a cast becomes: none (f32 from a 16-bit value, exact) or one rounding.
const char *castStep(graph::CastOp op) {
  Type to = cast<RankedTensorType>(op.getType()).getElementType();
  Type from = cast<RankedTensorType>(op.getInput().getType()).getElementType();
  if (to == from || to.isF32())
    return nullptr;
  return to.isBF16() ? "round_bf16" : "round_f16";
}

int64_t stepsOf(Operation *op) {
  if (auto castOp = dyn_cast<graph::CastOp>(op))
    return castStep(castOp) ? 1 : 0;
  return 1;
}

struct Group {
  std::vector<Operation *> members; // in program order
  int64_t first = 0, last = 0;      // positions
  int64_t steps = 0;
};

class Fuser {
public:
  explicit Fuser(func::FuncOp func) : func_(func), forward_(graph::forwardPassOps(func)) {
    int64_t pos = 0;
    for (Operation &op : func.getBody().front())
      position_[&op] = pos++;
  }

  void run() {
    for (Operation &op : func_.getBody().front())
      if (isFusible(&op))
        place(&op);
    for (auto &g : groups_)
      if (g && g->members.size() > 1 && g->steps > 0)
        rewrite(*g);
  }

private:
  // The key ops of one group share: part of the step, unit, scheduling attributes, shape.
  bool samePart(Operation *a, Operation *b) const {
    if (forward_.count(a) != forward_.count(b))
      return false;
    const bool ra = graph::nodeNameOf(a).find("/remat") != std::string::npos;
    const bool rb = graph::nodeNameOf(b).find("/remat") != std::string::npos;
    if (ra != rb || graph::moduleUnitOf(a) != graph::moduleUnitOf(b))
      return false;
    if (a->getDiscardableAttrDictionary() != b->getDiscardableAttrDictionary())
      return false;
    return cast<RankedTensorType>(a->getResult(0).getType()).getShape() ==
           cast<RankedTensorType>(b->getResult(0).getType()).getShape();
  }

  // Whether the members of `groups` and `op` may form one group at op's position.
  bool mayJoin(const std::vector<Group *> &groups, Operation *op) const {
    const int64_t at = position_.lookup(op);
    llvm::SmallPtrSet<Operation *, 32> inside;
    inside.insert(op);
    int64_t first = at, steps = stepsOf(op);
    for (Group *g : groups) {
      inside.insert(g->members.begin(), g->members.end());
      first = std::min(first, g->first);
      steps += g->steps;
    }
    if (at - first > kWindow || steps > graph::kMaxFusedSteps)
      return false;
    llvm::SetVector<Value> inputs;
    for (Operation *m : inside)
      for (Value v : m->getOperands())
        if (!inside.count(v.getDefiningOp()))
          inputs.insert(v);
    if (inputs.size() > kMaxInputs)
      return false;
    for (Group *g : groups)
      for (Operation *m : g->members)
        for (Operation *user : m->getResult(0).getUsers())
          if (!inside.count(user) && position_.lookup(user) < at)
            return false;
    return true;
  }

  void place(Operation *op) {
    std::vector<Group *> candidates;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      auto it = def ? groupOf_.find(def) : groupOf_.end();
      if (it == groupOf_.end() || !samePart(def, op))
        continue;
      if (std::find(candidates.begin(), candidates.end(), it->second) == candidates.end())
        candidates.push_back(it->second);
    }
    std::vector<Group *> chosen;
    if (!candidates.empty() && mayJoin(candidates, op)) {
      chosen = candidates;
    } else {
      for (Group *g : candidates)
        if (mayJoin({g}, op)) {
          chosen = {g};
          break;
        }
    }
    Group *target;
    if (chosen.empty()) {
      groups_.push_back(std::make_unique<Group>());
      target = groups_.back().get();
      target->first = position_.lookup(op);
    } else {
      target = chosen.front();
      for (size_t i = 1; i < chosen.size(); ++i) {
        Group *other = chosen[i];
        target->members.insert(target->members.end(), other->members.begin(),
                               other->members.end());
        target->first = std::min(target->first, other->first);
        target->steps += other->steps;
        for (Operation *m : other->members)
          groupOf_[m] = target;
        other->members.clear();
      }
      std::sort(target->members.begin(), target->members.end(),
                [&](Operation *a, Operation *b) {
                  return position_.lookup(a) < position_.lookup(b);
                });
    }
    target->members.push_back(op);
    target->last = position_.lookup(op);
    target->steps += stepsOf(op);
    groupOf_[op] = target;
  }

  void rewrite(Group &g) {
    llvm::SmallPtrSet<Operation *, 32> inside(g.members.begin(), g.members.end());
    llvm::SetVector<Value> inputs;
    for (Operation *m : g.members)
      for (Value v : m->getOperands())
        if (!inside.count(v.getDefiningOp()))
          inputs.insert(v);
    llvm::DenseMap<Value, int64_t> slot;
    for (auto [i, v] : llvm::enumerate(inputs))
      slot[v] = static_cast<int64_t>(i);
    Operation *last = g.members.back();
    OpBuilder b(last);
    SmallVector<Attribute> ops;
    SmallVector<int64_t> args;
    int64_t next = static_cast<int64_t>(inputs.size());
    for (Operation *m : g.members) {
      Value result = m->getResult(0);
      if (auto castOp = dyn_cast<graph::CastOp>(m)) {
        const char *step = castStep(castOp);
        if (!step) {
          slot[result] = slot.lookup(castOp.getInput());
          continue;
        }
        ops.push_back(b.getStringAttr(step));
        args.append({slot.lookup(castOp.getInput()), -1});
      } else {
        ops.push_back(b.getStringAttr(m->getName().stripDialect()));
        args.push_back(slot.lookup(m->getOperand(0)));
        args.push_back(m->getNumOperands() > 1 ? slot.lookup(m->getOperand(1)) : -1);
      }
      slot[result] = next++;
    }
    // Outputs: the values read outside the group, in program order.
    SmallVector<Value> outputs;
    SmallVector<Type> types;
    SmallVector<int64_t> results;
    for (Operation *m : g.members) {
      Value r = m->getResult(0);
      if (llvm::any_of(r.getUsers(), [&](Operation *u) { return !inside.count(u); })) {
        outputs.push_back(r);
        types.push_back(r.getType());
        results.push_back(slot.lookup(r));
      }
    }
    auto fused = b.create<graph::FusedElementwiseOp>(
        last->getLoc(), types, inputs.getArrayRef(), b.getArrayAttr(ops),
        b.getDenseI64ArrayAttr(args), b.getDenseI64ArrayAttr(results));
    for (NamedAttribute a : last->getDiscardableAttrs())
      fused->setAttr(a.getName(), a.getValue());
    for (auto [old, now] : llvm::zip(outputs, fused.getOutputs()))
      old.replaceAllUsesWith(now);
    for (auto it = g.members.rbegin(); it != g.members.rend(); ++it)
      (*it)->erase();
  }

  func::FuncOp func_;
  llvm::DenseSet<Operation *> forward_;
  llvm::DenseMap<Operation *, int64_t> position_;
  std::vector<std::unique_ptr<Group>> groups_;
  llvm::DenseMap<Operation *, Group *> groupOf_;
};

struct FuseElementwise : impl::FuseElementwiseBase<FuseElementwise> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    Fuser(func).run();
  }
};

} // namespace
} // namespace shardc
