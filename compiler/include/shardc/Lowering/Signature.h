//===- Signature.h - which function arguments and results the runtime binds by name -----===//
//
// @forward binds graph inputs; @train_step also binds the values that change from step to
// step: trained parameters, optimizer state, the step count and the learning rate, and
// returns their updated values under the same names. Frozen parameters stay in the weights.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_SIGNATURE_H
#define SHARDC_LOWERING_SIGNATURE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>

namespace shardc {

// The name the runtime feeds argument `index` under, or nullopt when the argument is a
// parameter that lives in the weights region.
std::optional<std::string> runtimeInputName(mlir::func::FuncOp func, unsigned index);

// The name result `index` is returned under.
std::string resultName(mlir::func::FuncOp func, unsigned index);

} // namespace shardc

#endif
