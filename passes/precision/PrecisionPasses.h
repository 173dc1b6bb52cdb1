//===- PrecisionPasses.h - the precision and recomputation passes ------------------------===//
// Declared in PrecisionPasses.td: each pass's create function and options, and
// registerPrecisionPasses().
#ifndef SHARDC_PASSES_PRECISION_PRECISIONPASSES_H
#define SHARDC_PASSES_PRECISION_PRECISIONPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/precision/PrecisionPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/precision/PrecisionPasses.h.inc"

} // namespace shardc

#endif
