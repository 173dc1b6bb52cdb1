//===- Pipeline.h - the pass pipeline from imported graph to planned program ------------===//
#ifndef SHARDC_TOOLS_SHARDC_PIPELINE_H
#define SHARDC_TOOLS_SHARDC_PIPELINE_H

#include "shardc/Autodiff/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace shardc::driver {

// One data-parallel program: the strategy and the rows of the batch its devices hold.
struct DataParallelOptions {
  int64_t ranks = 1;
  int64_t zeroStage = 0;
  int64_t localRows = 0; // 0: the batch divides evenly
  int64_t microBatches = 1; // the rows run as this many microbatches (shardc-micro-batches)
  double bucketMb = 25.0;
  std::string fsdpUnit;
  bool overlapCollectives = true; // plan-memory's overlap-collectives
};

// The passes on the global program, once per compilation: [decompose-mean-loss when sharding
// (`ranks` data-parallel devices times `tp` tensor-parallel ones > 1, or `microBatches` > 1:
// microbatches split the batch as ranks do),] [split-gemm-bias when
// tp > 1,] [build-train-step when `train` is given,] [propagate-sharding when sharding, with
// sequence parallelism when `sequenceParallel`]. Afterwards the training step carries the
// batch's sharding (graph.batch_size).
// When `dumpDir` is not empty, writes the module after import (00-import.mlir) and after each
// pass (NN-<pass>.mlir) into it; `nextDumpIndex` numbers the files across both phases.
mlir::LogicalResult runGlobalPasses(mlir::ModuleOp module, const std::string &dumpDir,
                                    const TrainStepOptions *train, int64_t ranks, int64_t tp,
                                    bool sequenceParallel,
                                    const std::vector<std::string> &shardOverrides,
                                    int64_t microBatches, int &nextDumpIndex);

// The passes on one device's program: [partition (for one microbatch's rows),
// micro-batches when dp->microBatches > 1, place-on-mesh and the strategy's collective pass
// (all-reduce-gradients, shard-optimizer-state or shard-parameters; none at dp=1, zero=0) when
// `dp` is given,] fold-constants and plan-memory.
mlir::LogicalResult runLocalPasses(mlir::ModuleOp module, const std::string &dumpDir,
                                   const TrainStepOptions *train, const DataParallelOptions *dp,
                                   int &nextDumpIndex);

// Writes `module` to `path`; emits an error on failure.
mlir::LogicalResult writeModule(mlir::ModuleOp module, const std::string &path);

} // namespace shardc::driver

#endif
