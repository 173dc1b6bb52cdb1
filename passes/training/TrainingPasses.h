//===- TrainingPasses.h - the training step's passes -------------------------------------===//
// Declared in TrainingPasses.td: each pass's create function and options, and
// registerTrainingPasses().
#ifndef SHARDC_PASSES_TRAINING_TRAININGPASSES_H
#define SHARDC_PASSES_TRAINING_TRAININGPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <functional>
#include <string>

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/training/TrainingPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/training/TrainingPasses.h.inc"

// An adapter parameter shardc-lora-adapters adds: A ([r, in], PEFT initialises it
// Kaiming-uniform with fan-in `in`) or B ([out, r], zeros).
enum class LoraParameterKind { A, B };
using LoraParameterFn = std::function<void(const std::string &name, mlir::RankedTensorType type,
                                           LoraParameterKind kind, int64_t fanIn)>;
// shardc-lora-adapters telling the driver each parameter it adds, for its initial value.
std::unique_ptr<mlir::Pass> createLoraAdapters(const LoraAdaptersOptions &options,
                                               LoraParameterFn onParameter);

// A weight shardc-quantize-base replaces: its name, its [rows = out, cols = in] size, whether
// the parameter is stored [in, out] (transposed against the quantized layout), and the new
// parameters' names (codes; scales, empty for bf16), for the driver to write their values.
struct QuantizedBaseWeight {
  std::string name, codesName, scalesName;
  int64_t rows = 0, cols = 0;
  bool storedInByOut = false;
};
using QuantizedWeightFn = std::function<void(const QuantizedBaseWeight &)>;
std::unique_ptr<mlir::Pass> createQuantizeBase(const QuantizeBaseOptions &options,
                                               QuantizedWeightFn onWeight);

} // namespace shardc

#endif
