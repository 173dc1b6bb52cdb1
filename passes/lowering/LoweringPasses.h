//===- LoweringPasses.h - the passes before the program is emitted -----------------------===//
// Declared in LoweringPasses.td: each pass's create function and options, and
// registerLoweringPasses().
#ifndef SHARDC_PASSES_LOWERING_LOWERINGPASSES_H
#define SHARDC_PASSES_LOWERING_LOWERINGPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/lowering/LoweringPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/lowering/LoweringPasses.h.inc"

} // namespace shardc

#endif
