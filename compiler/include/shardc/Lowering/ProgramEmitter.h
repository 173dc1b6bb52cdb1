//===- ProgramEmitter.h - planned @forward -> runtime program ---------------------------===//
//
// Turns a function that went through the pass pipeline (static shapes, constants folded,
// arena offsets and workspace planned) into the runtime's program message, the bytes of the
// WEIGHTS region (frozen parameters from the WeightStore, constants from the IR) and the
// initial values of the trained parameters. Every buffer gets its role (BufferRoles.h), and the
// program its planned peak memory (runtime/common/planned_memory.h).
//
// The bundle's weights file is the region followed by the initial values (layOutWeightsFile):
// the runtime keeps the region resident for the kernels and reads the initial values once,
// each rank only its part, into the parameters it trains.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_PROGRAMEMITTER_H
#define SHARDC_LOWERING_PROGRAMEMITTER_H

#include "shardc/Lowering/WeightsRegion.h"
#include "shardc/Support/WeightStore.h"

#include "runtime/program/program.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <vector>

namespace shardc {

struct EmittedProgram {
  program::Program program;
  WeightsRegion weights; // the WEIGHTS region, program.weights_bytes long
  // The trained parameters' initial values, each 64-byte aligned (whole parameters, also for
  // sharded ones). program.state_init offsets count from the start of this until
  // layOutWeightsFile moves them into the weights file. A parameter whose data is absent
  // (planning only) has its range reserved and no state_init.
  WeightsRegion initialValues;
};

// Emits errors at the offending op on failure.
mlir::FailureOr<EmittedProgram> emitProgram(mlir::func::FuncOp func, const WeightStore &weights);

// The weights file of programs that share `region` and `initialValues`: the region, then the
// initial values from the next 64-byte boundary; nullopt when either has absent data (planning
// only: there is no file to write). Moves each program's state_init offsets from
// `initialValues` into the file and sets its weights_bytes (the region's size) and planned peak.
std::optional<std::vector<char>> layOutWeightsFile(const WeightsRegion &region,
                                                   const WeightsRegion &initialValues,
                                                   llvm::ArrayRef<program::Program *> programs);

} // namespace shardc

#endif
