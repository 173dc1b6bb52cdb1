//===- ProgramEmitter.h - planned @forward -> runtime program ---------------------------===//
//
// Turns a function that went through the pass pipeline (static shapes, constants folded,
// arena offsets and workspace planned) into the runtime's program message and the bytes of the
// weights region (parameters from the WeightStore, then constants from the IR). Every buffer
// gets its role (BufferRoles.h), and the program its planned peak memory
// (runtime/memory/planned_memory.h).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_PROGRAMEMITTER_H
#define SHARDC_LOWERING_PROGRAMEMITTER_H

#include "shardc/Support/WeightStore.h"

#include "runtime/program/program.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <vector>

namespace shardc {

struct EmittedProgram {
  program::Program program;
  std::vector<char> weights; // the WEIGHTS region, program.weights_bytes long
  bool weightsComplete = true; // false when some parameter's data was absent (planning only)
};

// Emits errors at the offending op on failure.
mlir::FailureOr<EmittedProgram> emitProgram(mlir::func::FuncOp func, const WeightStore &weights);

} // namespace shardc

#endif
