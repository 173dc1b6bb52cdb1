//===- ReverseMode.cpp ------------------------------------------------------------------===//
#include "shardc/Autodiff/ReverseMode.h"

#include "shardc/Dialect/Graph/GradientUtils.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace shardc::graph;

namespace shardc {

namespace {

// Values computed (through f32 data) from any of `wrt`: the only ones whose gradient matters.
llvm::DenseSet<Value> dependsOn(Block &block, ArrayRef<Value> wrt) {
  llvm::DenseSet<Value> active(wrt.begin(), wrt.end());
  for (Operation &op : block.without_terminator()) {
    bool fed = llvm::any_of(op.getOperands(),
                            [&](Value v) { return active.contains(v) && isDifferentiable(v); });
    if (!fed)
      continue;
    for (Value r : op.getResults())
      if (isDifferentiable(r))
        active.insert(r);
  }
  return active;
}

// Gives each op the builder inserts the pipeline stage of the forward op whose gradient it
// is building (none when that op has none): a stage runs the backward pass of its own ops.
struct InheritStage : OpBuilder::Listener {
  IntegerAttr stage;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (stage)
      op->setAttr(kStageAttr, stage);
  }
};

} // namespace

FailureOr<SmallVector<Value>> buildGradients(Block &block, Value loss, ArrayRef<Value> wrt,
                                             Value seed) {
  llvm::DenseSet<Value> active = dependsOn(block, wrt);
  OpBuilder b(block.getTerminator());
  InheritStage inheritStage;
  b.setListener(&inheritStage);
  llvm::DenseMap<Value, Value> grads;
  auto lossType = cast<RankedTensorType>(loss.getType());
  grads[loss] =
      seed ? seed
           : b.create<ConstantOp>(loss.getLoc(), DenseElementsAttr::get(lossType, 1.0f));

  // The ops of the forward pass, captured before any backward op is appended.
  SmallVector<Operation *> forwardOps;
  for (Operation &op : block.without_terminator())
    forwardOps.push_back(&op);

  for (Operation *op : llvm::reverse(forwardOps)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      any |= static_cast<bool>(resultGrads.back());
    }
    bool feeds = llvm::any_of(op->getOperands(), [&](Value v) { return active.contains(v); });
    if (!any || !feeds)
      continue;
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no gradient rule, but the loss depends on it through "
                             "trainable values");
    SmallVector<Value> operandGrads;
    inheritStage.stage = op->getAttrOfType<IntegerAttr>(kStageAttr);
    if (failed(rule.buildVjp(b, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("gradient rule returned ")
             << operandGrads.size() << " gradients for " << op->getNumOperands() << " operands";
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!g || !active.contains(operand))
        continue;
      if (g.getType() != operand.getType())
        return op->emitOpError("gradient rule produced ")
               << g.getType() << " for an operand of type " << operand.getType();
      Value &acc = grads[operand];
      acc = acc ? Value(b.create<AddOp>(gradLoc(op), acc, g)) : g;
    }
  }
  inheritStage.stage = nullptr;

  SmallVector<Value> result;
  llvm::DenseSet<Operation *> keep(forwardOps.begin(), forwardOps.end());
  for (Value v : wrt) {
    result.push_back(grads.lookup(v));
    if (Value g = result.back(); g && g.getDefiningOp())
      keep.insert(g.getDefiningOp());
  }
  // Rules compute every operand's gradient; the ones nobody needed are dropped here.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block.getOperations())))
    if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty() && isPure(&op) &&
        !keep.contains(&op))
      op.erase();
  return result;
}

} // namespace shardc
