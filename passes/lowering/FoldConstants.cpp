//===- FoldConstants.cpp - evaluate constant subgraphs at compile time ------------------===//
#include "passes/lowering/LoweringPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/ConstantEvaluator.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace shardc {
#define GEN_PASS_DEF_FOLDCONSTANTS
#include "passes/lowering/LoweringPasses.h.inc"

namespace {

struct FoldConstantsPass : impl::FoldConstantsBase<FoldConstantsPass> {
  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    // Program order: folding an op makes its users' operands constant before they are seen.
    llvm::SmallVector<mlir::Operation *> ops;
    func.walk([&](mlir::Operation *op) { ops.push_back(op); });
    for (mlir::Operation *op : ops) {
      bool folded = false;
      if (failed(tryFoldToConstants(op, folded)))
        return signalPassFailure();
    }
    // Erase what folding left unused, users before producers.
    for (mlir::Operation &op : llvm::make_early_inc_range(
             llvm::reverse(func.getBody().front().getOperations())))
      if (!op.hasTrait<mlir::OpTrait::IsTerminator>() && op.use_empty() && mlir::isPure(&op))
        op.erase();
  }
};

} // namespace
} // namespace shardc
