//===- MicroBatchPasses.h - the microbatch loop's pass -----------------------------------===//
// Declared in MicroBatchPasses.td: each pass's create function and options, and
// registerMicroBatchPasses().
#ifndef SHARDC_PASSES_MICROBATCH_MICROBATCHPASSES_H
#define SHARDC_PASSES_MICROBATCH_MICROBATCHPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Pass/Pass.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/microbatch/MicroBatchPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/microbatch/MicroBatchPasses.h.inc"

} // namespace shardc

#endif
