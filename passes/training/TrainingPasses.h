//===- TrainingPasses.h - the training step's passes -------------------------------------===//
// Declared in TrainingPasses.td: each pass's create function and options, and
// registerTrainingPasses().
#ifndef SHARDC_PASSES_TRAINING_TRAININGPASSES_H
#define SHARDC_PASSES_TRAINING_TRAININGPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/training/TrainingPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/training/TrainingPasses.h.inc"

} // namespace shardc

#endif
