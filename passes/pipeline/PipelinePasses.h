//===- PipelinePasses.h - the pipeline stages' passes ------------------------------------===//
// Declared in PipelinePasses.td: each pass's create function and options, and
// registerPipelinePasses().
#ifndef SHARDC_PASSES_PIPELINE_PIPELINEPASSES_H
#define SHARDC_PASSES_PIPELINE_PIPELINEPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Pass/Pass.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/pipeline/PipelinePasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/pipeline/PipelinePasses.h.inc"

} // namespace shardc

#endif
