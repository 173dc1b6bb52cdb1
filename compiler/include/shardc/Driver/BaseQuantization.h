//===- BaseQuantization.h - --base-dtype on the imported model --------------------------===//
//
// Runs shardc-quantize-base on the imported @forward (after --lora) and writes the quantized
// parameters it adds into the model's weights, quantized from the f32 weights they replace
// (runtime/support/quantized_weights.h); without the weights (--no-weights) only their types.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DRIVER_BASEQUANTIZATION_H
#define SHARDC_DRIVER_BASEQUANTIZATION_H

#include "shardc/Parallel/CompileOptions.h"
#include "shardc/Support/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace shardc::driver {

// Quantizes the frozen base of `module` as opts.baseDtype says (not fp32). On failure returns
// false with a one-line `error` naming the flag and the weight.
bool quantizeBase(const CompileOptions &opts, mlir::ModuleOp module, WeightStore &weights,
                  std::string &error);

} // namespace shardc::driver

#endif
