//===- ForwardPass.cpp ------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/ForwardPass.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc::graph {

llvm::DenseSet<mlir::Operation *> forwardPassOps(mlir::func::FuncOp func) {
  llvm::DenseSet<mlir::Operation *> forward;
  mlir::Operation *ret = func.getBody().front().getTerminator();
  llvm::SmallVector<mlir::Operation *> stack;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, kOutputAttr))
      if (mlir::Operation *def = ret->getOperand(i).getDefiningOp())
        stack.push_back(def);
  while (!stack.empty()) {
    mlir::Operation *op = stack.pop_back_val();
    if (!forward.insert(op).second)
      continue;
    for (mlir::Value v : op->getOperands())
      if (mlir::Operation *def = v.getDefiningOp())
        stack.push_back(def);
  }
  return forward;
}

} // namespace shardc::graph
