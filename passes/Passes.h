//===- Passes.h - every shardc pass, by phase --------------------------------------------===//
// Each phase of the compiler has a folder under passes/ with its passes' .td and header;
// this header brings them all in.
#ifndef SHARDC_PASSES_PASSES_H
#define SHARDC_PASSES_PASSES_H

#include "passes/dataparallel/DataParallelPasses.h"
#include "passes/fusion/FusionPasses.h"
#include "passes/lowering/LoweringPasses.h"
#include "passes/microbatch/MicroBatchPasses.h"
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
  registerDataParallelPasses();
  registerLoweringPasses();
}

// Attribute names written by the plan-memory pass and read by the program emitter.
inline constexpr llvm::StringLiteral kOffsetsAttr = "shardc.offsets";
inline constexpr llvm::StringLiteral kArgOffsetAttr = "shardc.offset";
inline constexpr llvm::StringLiteral kArenaBytesAttr = "shardc.arena_bytes";
// The workspace an op's kernel needs (only on ops that need one) and the rank's workspace size
// (the largest need, on the function).
inline constexpr llvm::StringLiteral kWorkspaceAttr = "shardc.workspace";
inline constexpr llvm::StringLiteral kWorkspaceBytesAttr = "shardc.workspace_bytes";
// On a collective that runs asynchronously (the runtime waits for it before the first op that
// reads its results), and the function's workspace for those collectives' scratch.
inline constexpr llvm::StringLiteral kAsyncAttr = "shardc.async";
inline constexpr llvm::StringLiteral kCommWorkspaceBytesAttr = "shardc.comm_workspace_bytes";
// On a graph result: it is written over the bytes of the graph input of the same name (state
// the step updates in place; Binding.in_place in the program).
inline constexpr llvm::StringLiteral kInPlaceAttr = "shardc.in_place";

} // namespace shardc

#endif
