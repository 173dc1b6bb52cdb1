//===- ForwardPass.h - the ops a training step's graph outputs depend on -----------------===//
//
// A training step computes its graph outputs (the loss) in the forward pass; what they
// depend on, op by op back from the return, is that pass, and the rest (gradients, the
// update) comes after it. Pipeline stages cut the forward pass and the cost model times it.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DIALECT_GRAPH_FORWARDPASS_H
#define SHARDC_DIALECT_GRAPH_FORWARDPASS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace shardc::graph {

// The ops of `func`'s body the results marked graph.output depend on.
llvm::DenseSet<mlir::Operation *> forwardPassOps(mlir::func::FuncOp func);

} // namespace shardc::graph

#endif
