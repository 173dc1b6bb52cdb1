//===- BufferRoles.h - what each buffer of a program holds, for memory accounting -------===//
//
// plan.txt breaks the planned peak memory down by what the bytes hold: parameters, gradients,
// optimizer state, inputs, activations, constants (program::BufferRole). The roles come from
// the function's signature (argument and result attributes) and, for gradients, from the
// optimizer kernels that consume them.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_BUFFERROLES_H
#define SHARDC_LOWERING_BUFFERROLES_H

#include "runtime/program/program.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace shardc {

// Argument `index`: a batch input, step, lr or seed is an input, optimizer state is optimizer
// state, a parameter (trained or frozen) a parameter.
program::BufferRole argumentRole(mlir::func::FuncOp func, unsigned index);

// The role result `index` gives the value it returns: updated parameters are parameters,
// updated optimizer state optimizer state, the updated step count an input (it is fed back);
// nullopt for the model's own outputs (the value keeps the role of what produced it).
std::optional<program::BufferRole> resultRole(mlir::func::FuncOp func, unsigned index);

// Marks parameter gradients in an emitted program: the grad operand (input 1) of every
// adamw_update and sgd_update op and, when clipping produced it (scale_by_clip), the
// unclipped gradient it scaled.
void markGradientBuffers(program::Program &program);

} // namespace shardc

#endif
