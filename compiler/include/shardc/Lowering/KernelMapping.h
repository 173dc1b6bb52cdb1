//===- KernelMapping.h - which runtime kernel runs a graph op ---------------------------===//
//
// The single place that knows how a graph op becomes a kernel call (docs/kernels.md): used
// both by the program emitter and by compile-time constant evaluation, so both agree.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_KERNELMAPPING_H
#define SHARDC_LOWERING_KERNELMAPPING_H

#include "runtime/program/program.pb.h"

#include "mlir/IR/Operation.h"

#include <map>
#include <string>

namespace shardc {

struct KernelCall {
  std::string kernel;
  // Operands in kernel order; a null Value is an absent optional operand (-1 in the program).
  llvm::SmallVector<mlir::Value, 4> inputs;
  llvm::SmallVector<mlir::Value, 4> outputs;
  std::map<std::string, program::Attribute> attrs;
};

// The kernel call for `op`. Ops that only exist at compile time (constants, shape, range,
// constant_of_shape, dropout) have none: emits an error at the op and returns failure.
mlir::FailureOr<KernelCall> mapToKernel(mlir::Operation *op);

// The program dtype of a tensor element type (f32, i64, i32, i1), or DTYPE_UNSPECIFIED.
program::DType toProgramDType(mlir::Type elementType);

} // namespace shardc

#endif
