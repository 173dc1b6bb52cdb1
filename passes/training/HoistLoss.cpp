//===- HoistLoss.cpp - compute the step's loss before the optimizer updates ------------===//
#include "passes/training/TrainingPasses.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/Signature.h"

#include "llvm/ADT/SetVector.h"

namespace shardc {
#define GEN_PASS_DEF_HOISTLOSS
#include "passes/training/TrainingPasses.h.inc"

namespace {

struct HoistLossPass : impl::HoistLossBase<HoistLossPass> {
  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    mlir::Block &body = func.getBody().front();
    mlir::Operation *terminator = body.getTerminator();
    mlir::Operation *loss = nullptr;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (resultName(func, i) == kLossName)
        loss = terminator->getOperand(i).getDefiningOp();
    if (loss == nullptr)
      return;

    // The loss's producers, operands before users (a post-order walk of the use-def graph).
    llvm::SetVector<mlir::Operation *> slice;
    llvm::SmallVector<std::pair<mlir::Operation *, unsigned>> stack{{loss, 0}};
    llvm::DenseSet<mlir::Operation *> visited{loss};
    while (!stack.empty()) {
      auto &[op, next] = stack.back();
      if (next < op->getNumOperands()) {
        mlir::Operation *def = op->getOperand(next++).getDefiningOp();
        if (def && def->getBlock() == &body && visited.insert(def).second)
          stack.push_back({def, 0});
        continue;
      }
      slice.insert(op);
      stack.pop_back();
    }

    // The first optimizer update: what runs before it stays where it is (moving a microbatch's
    // forward pass up would keep its activations alive across the others).
    mlir::Operation *firstUpdate = nullptr;
    for (mlir::Operation &op : body)
      if (op.hasTrait<graph::traits::OptimizerUpdate>()) {
        firstUpdate = &op;
        break;
      }

    // Each op after it, in that order, moves up to just after its latest operand's definition
    // (or to the top of the body): its operands are then all defined before it, as before.
    for (mlir::Operation *op : slice) {
      if (firstUpdate && op->isBeforeInBlock(firstUpdate))
        continue;
      mlir::Operation *latest = nullptr;
      for (mlir::Value operand : op->getOperands())
        if (mlir::Operation *def = operand.getDefiningOp();
            def && def->getBlock() == &body && (!latest || latest->isBeforeInBlock(def)))
          latest = def;
      if (latest == nullptr) {
        if (op != &body.front())
          op->moveBefore(&body.front());
      } else if (latest->getNextNode() != op) {
        op->moveAfter(latest);
      }
    }
  }
};

} // namespace
} // namespace shardc
