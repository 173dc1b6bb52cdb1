//===- DataParallelPasses.h - the data-parallel passes -----------------------------------===//
// Declared in DataParallelPasses.td: each pass's create function and options, and
// registerDataParallelPasses().
#ifndef SHARDC_PASSES_DATAPARALLEL_DATAPARALLELPASSES_H
#define SHARDC_PASSES_DATAPARALLEL_DATAPARALLELPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Pass/Pass.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/dataparallel/DataParallelPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/dataparallel/DataParallelPasses.h.inc"

} // namespace shardc

#endif
