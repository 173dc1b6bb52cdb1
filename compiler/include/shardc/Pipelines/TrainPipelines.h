//===- TrainPipelines.h - the pass pipelines from imported graph to planned program ------===//
//
// shardc compiles in two phases: the global pipeline once per mesh (the step on the global
// batch, with the batch's sharding propagated), then the local pipeline once per distinct
// program (one device's rows: partitioned, its collectives placed, memory planned). The
// add*Passes functions fill a pass manager; run*Passes run them as shardc does, writing
// --dump-ir-after-all's files; PipelineRegistration.h registers them with shardc-opt.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PIPELINES_TRAINPIPELINES_H
#define SHARDC_PIPELINES_TRAINPIPELINES_H

#include "shardc/Autodiff/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace shardc {

// The mesh of the global pipeline: `ranks` data-parallel devices times `tp` tensor-parallel
// ones, each device's rows run as `microBatches` microbatches.
struct GlobalPassOptions {
  int64_t ranks = 1;
  int64_t tp = 1;
  bool sequenceParallel = false;
  std::vector<std::string> shardOverrides; // --shard REGEX=SPEC, in order
  int64_t microBatches = 1;
  int64_t pipelineStages = 1;           // --strategy pp=N: assign-stages cuts @forward
  int64_t virtualStages = 1;            // --virtual-stages: into pp · v virtual stages
  std::vector<std::string> pipelineCuts; // --pp-cuts
};

// One data-parallel program: the strategy and the rows of the batch its devices hold.
struct DataParallelOptions {
  int64_t ranks = 1;
  int64_t zeroStage = 0;
  int64_t localRows = 0;    // 0: the batch divides evenly
  int64_t microBatches = 1; // the rows run as this many microbatches (shardc-micro-batches)
  double bucketMb = 25.0;
  std::string fsdpUnit;
  bool overlapCollectives = true; // plan-memory's overlap-collectives
  int64_t pipelineStages = 1;      // > 1: split-stages keeps stage `pipelineStage`
  int64_t pipelineStage = 0;
  std::string schedule = "1f1b";   // --schedule
  int64_t virtualStages = 1;       // --virtual-stages (interleaved)
};

// The passes on the global program, once per compilation: [decompose-mean-loss when sharding
// (`ranks` data-parallel devices times `tp` tensor-parallel ones > 1, or `microBatches` > 1:
// microbatches split the batch as ranks do; pipeline stages alone do not),] [split-gemm-bias when tp > 1,] [bf16-matmuls
// under 16-bit precision,] [build-train-step and remat when `train` is given,]
// [propagate-sharding when sharding, with sequence parallelism when `sequenceParallel`];
// assign-stages before build-train-step when mesh.pipelineStages > 1 (which also shards).
// Afterwards the training step carries the batch's sharding (graph.batch_size).
void addGlobalPasses(mlir::OpPassManager &pm, const TrainStepOptions *train,
                     const GlobalPassOptions &mesh);

// The passes on one device's program: [partition (for one microbatch's rows),
// micro-batches when dp->microBatches > 1, split-stages when dp->pipelineStages > 1,
// place-on-mesh and the strategy's collective pass
// (all-reduce-gradients, shard-optimizer-state or shard-parameters; none at dp=1, zero=0) when
// `train` and `dp` are given,] [half-storage,] fold-constants, [hoist-loss,] fill-large-splats,
// fold-transposes,
// [fuse-elementwise when `fuseElementwise` (--fuse-elementwise),] plan-memory.
void addLocalPasses(mlir::OpPassManager &pm, const TrainStepOptions *train,
                    const DataParallelOptions *dp, bool fuseElementwise);

// Runs addGlobalPasses' pipeline on `module`. When `dumpDir` is not empty, writes the module
// after import (00-import.mlir) and after each pass (NN-<pass>.mlir) into it; `nextDumpIndex`
// numbers the files across both phases.
mlir::LogicalResult runGlobalPasses(mlir::ModuleOp module, const std::string &dumpDir,
                                    const TrainStepOptions *train, const GlobalPassOptions &mesh,
                                    int &nextDumpIndex);

// Runs addLocalPasses' pipeline on `module`, dumping as runGlobalPasses does.
mlir::LogicalResult runLocalPasses(mlir::ModuleOp module, const std::string &dumpDir,
                                   const TrainStepOptions *train, const DataParallelOptions *dp,
                                   bool fuseElementwise, int &nextDumpIndex);

// Writes `module` to `path` as the dumps are written; emits an error on failure.
mlir::LogicalResult writeModule(mlir::ModuleOp module, const std::string &path);

} // namespace shardc

#endif
