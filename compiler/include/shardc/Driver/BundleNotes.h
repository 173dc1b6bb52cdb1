//===- BundleNotes.h - what plan.txt says about the trained set and recomputation --------===//
#ifndef SHARDC_DRIVER_BUNDLENOTES_H
#define SHARDC_DRIVER_BUNDLENOTES_H

#include "shardc/Plan/PlanNotes.h"
#include "shardc/Parallel/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace shardc {

// The trained set's part of the plan notes (read from @forward, before the passes replace it
// by @train_step): where it comes from and what stays frozen; and the precision and
// microbatch notes of the options.
void addTrainedSetNotes(const CompileOptions &opts, mlir::ModuleOp module, PlanNotes &notes);

// shardc-remat's report on the training step (graph.remat): empty without recomputation;
// *units: the units it found (0 without recomputation).
std::vector<std::string> rematReport(mlir::ModuleOp module, int64_t *units);

} // namespace shardc

#endif
