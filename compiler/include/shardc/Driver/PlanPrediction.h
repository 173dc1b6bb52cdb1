//===- PlanPrediction.h - --cluster: the cost model's prediction of the compiled plan -----===//
#ifndef SHARDC_DRIVER_PLANPREDICTION_H
#define SHARDC_DRIVER_PLANPREDICTION_H

#include "shardc/Cost/Cluster.h"
#include "shardc/Cost/CostModel.h"
#include "shardc/Parallel/CompileOptions.h"
#include "shardc/Parallel/StepProfiler.h"
#include "shardc/Plan/PlanNotes.h"
#include "shardc/Support/Diagnostics.h"
#include "shardc/Support/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"

namespace shardc {

// opts.cluster, checked to hold --gpus; false with the error printed.
bool loadClusterOption(const CompileOptions &opts, cost::Cluster &cluster);

// Predicts one step of `chosen` on opts.cluster (Cost/CostModel.h) from `imported` (the model
// as imported, untouched) into notes.prediction and notes.predictionLines, with `profiler`'s
// profiles when given (those auto's search compiled), else its own. False with the
// error printed (one line: the cluster file or name at fault, or why the plan cannot be
// costed).
bool predictPlan(mlir::MLIRContext &ctx, const CompileOptions &opts, mlir::ModuleOp imported,
                 WeightStore &weights, FirstErrorCollector &errors,
                 const ParallelStrategy &chosen, PlanNotes &notes,
                 cost::Prediction *full = nullptr, cost::Candidate *costed = nullptr,
                 StepProfiler *profiler = nullptr);

} // namespace shardc

#endif
