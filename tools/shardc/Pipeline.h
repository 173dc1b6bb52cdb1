//===- Pipeline.h - the pass pipeline from imported graph to planned program ------------===//
#ifndef SHARDC_TOOLS_SHARDC_PIPELINE_H
#define SHARDC_TOOLS_SHARDC_PIPELINE_H

#include "shardc/Autodiff/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace shardc::driver {

// One data-parallel rank's compilation: its rows of the global batch and the strategy.
struct DataParallelOptions {
  int64_t ranks = 1;
  int64_t zeroStage = 0;
  int64_t localRows = 1;
  int64_t globalRows = 1;
  double bucketMb = 25.0;
  std::string fsdpUnit;
};

// Runs [scale-loss when `dp` is given,] [build-train-step when `train` is given,]
// [place-on-mesh and the strategy's collective pass (all-reduce-gradients,
// shard-optimizer-state or shard-parameters) when both are,] fold-constants and plan-memory
// on `module`. When `dumpDir` is not empty, writes the module after import (00-import.mlir)
// and after each pass (NN-<pass>.mlir) into it.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, const std::string &dumpDir,
                                const TrainStepOptions *train,
                                const DataParallelOptions *dp = nullptr);

// Writes `module` to `path`; emits an error on failure.
mlir::LogicalResult writeModule(mlir::ModuleOp module, const std::string &path);

} // namespace shardc::driver

#endif
