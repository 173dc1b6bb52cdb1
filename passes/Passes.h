//===- Passes.h - every shardc pass, by phase --------------------------------------------===//
// Each phase of the compiler has a folder under passes/ with its passes' .td and header;
// this header brings them all in.
#ifndef SHARDC_PASSES_PASSES_H
#define SHARDC_PASSES_PASSES_H

#include "passes/dataparallel/DataParallelPasses.h"
#include "passes/fusion/FusionPasses.h"
#include "passes/lowering/LoweringPasses.h"
#include "passes/microbatch/MicroBatchPasses.h"
#include "passes/pipeline/PipelinePasses.h"
#include "passes/precision/PrecisionPasses.h"
#include "passes/sharding/ShardingPasses.h"
#include "passes/training/TrainingPasses.h"

namespace shardc {

// Every shardc pass, for shardc-opt's command line.
inline void registerShardcPasses() {
  registerTrainingPasses();
  registerFusionPasses();
  registerPrecisionPasses();
  registerShardingPasses();
  registerMicroBatchPasses();
  registerPipelinePasses();
  registerDataParallelPasses();
  registerLoweringPasses();
}

} // namespace shardc

#endif
