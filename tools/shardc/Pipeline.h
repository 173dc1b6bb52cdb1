//===- Pipeline.h - the pass pipeline from imported graph to planned program ------------===//
#ifndef SHARDC_TOOLS_SHARDC_PIPELINE_H
#define SHARDC_TOOLS_SHARDC_PIPELINE_H

#include "shardc/Autodiff/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace shardc::driver {

// Runs [build-train-step when `train` is given,] fold-constants and plan-memory on `module`.
// When `dumpDir` is not empty, writes the module after import (00-import.mlir) and after
// each pass (NN-<pass>.mlir) into it.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, const std::string &dumpDir,
                                const TrainStepOptions *train);

// Writes `module` to `path`; emits an error on failure.
mlir::LogicalResult writeModule(mlir::ModuleOp module, const std::string &path);

} // namespace shardc::driver

#endif
