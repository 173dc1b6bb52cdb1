//===- LoraSetup.h - --lora on the imported model ---------------------------------------===//
//
// Runs shardc-lora-adapters on the imported @forward and gives each adapter parameter it adds
// its initial value in the model's weights: PEFT's initialisation (A Kaiming-uniform, B
// zeros) or the tensors of a PEFT adapter file (--lora-init).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DRIVER_LORASETUP_H
#define SHARDC_DRIVER_LORASETUP_H

#include "shardc/Parallel/CompileOptions.h"
#include "shardc/Plan/PlanNotes.h"
#include "shardc/Support/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace shardc::driver {

// Adds the adapters (opts.lora) to `module` and their values to `weights`. On failure returns
// false with a one-line `error` naming the flag, the weight or the file.
bool addLoraAdapters(const CompileOptions &opts, mlir::ModuleOp module, WeightStore &weights,
                     std::string &error);

// The bundle's lora.json for the adapters `adapterNames` (the bundle's parameters named
// MODULE.lora_A.weight / MODULE.lora_B.weight): each one's key in a PEFT adapter file (that of
// the --lora-init file it came from, else PEFT's prefix and its own name, as addLoraAdapters
// recorded it in the merges) and the PEFT LoraConfig (adapter_config.json) the adapters
// follow, for shardrun --save-adapters. Empty, with `error`, for an adapter without a record.
// Also each adapted weight's merge (`merges`, for shardrun --export-onnx --merge-lora) with the
// dtype its base is stored in, and the quantized weights no adapter merges into (--base-dtype:
// the export writes the dequantized weights the step computed with).
std::string loraAdapterConfigJson(const CompileOptions &opts,
                                  const std::vector<std::string> &adapterNames,
                                  const std::vector<PlanNotes::LoraMerge> &merges,
                                  const std::vector<PlanNotes::QuantizedWeight> &quantized,
                                  std::string &error);

} // namespace shardc::driver

#endif
