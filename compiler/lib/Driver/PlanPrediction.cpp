//===- PlanPrediction.cpp ---------------------------------------------------------------===//
#include "shardc/Driver/PlanPrediction.h"

#include "shardc/Cost/Cluster.h"
#include "shardc/Cost/CostModel.h"
#include "shardc/Cost/PredictedTrace.h"
#include "shardc/Parallel/StepProfiler.h"

#include <cstdio>
#include <optional>

namespace shardc {

bool loadClusterOption(const CompileOptions &opts, cost::Cluster &cluster) {
  std::string error;
  if (!cost::loadCluster(opts.cluster, cluster, error) ||
      !cost::clusterHolds(cluster, opts.gpus, error)) {
    printError(error);
    return false;
  }
  return true;
}

bool predictPlan(mlir::MLIRContext &ctx, const CompileOptions &opts, mlir::ModuleOp imported,
                 WeightStore &weights, FirstErrorCollector &errors,
                 const ParallelStrategy &chosen, PlanNotes &notes, cost::Prediction *full,
                 cost::Candidate *costed, StepProfiler *profiler) {
  cost::Cluster cluster;
  if (!loadClusterOption(opts, cluster))
    return false;
  std::string error;
  const std::string remat = opts.train.remat == "auto" ? "none" : opts.train.remat;
  std::optional<StepProfiler> own;
  if (!profiler)
    profiler = &own.emplace(ctx, opts, imported, weights, errors);
  std::string refusal;
  const cost::StepProfile *profile =
      profiler->profile(chosen.tp, chosen.sequenceParallel, remat, refusal);
  if (!profile) {
    printError(opts.model + ": --cluster: the step could not be profiled: " + refusal);
    return false;
  }
  cost::Candidate c;
  c.dp = chosen.dp;
  c.tp = chosen.tp;
  c.pp = chosen.pp;
  c.sequenceParallel = chosen.sequenceParallel;
  c.zero = chosen.zero;
  c.remat = remat;
  c.microBatches = opts.microBatches;
  c.schedule = chosen.pp > 1 ? opts.schedule : "";
  c.virtualStages = chosen.pp > 1 ? opts.virtualStages : 1;
  cost::Prediction p;
  if (!cost::predictStep(*profile, cluster, c, p, error)) {
    printError(opts.model + ": --cluster: " + c.text() + ": " + error);
    return false;
  }
  if (full)
    *full = p;
  if (costed)
    *costed = c;
  notes.predicted = true;
  notes.prediction = {p.stepSeconds,        p.tokensPerSecond, p.modelFlopsPerDevice,
                      p.mfu,                p.bubbleFraction,  p.exposedCommSeconds,
                      p.recomputeSeconds,   p.peakBytes};
  notes.predictionLines.push_back("cluster " + cost::clusterSummary(cluster));
  notes.predictionLines.push_back(c.text() + ": " + cost::predictionText(p));
  char line[256];
  std::snprintf(line, sizeof line,
                "model FLOPs %.4g per step (the products of the forward and backward passes); "
                "%lld rows of %lld tokens",
                profile->modelFlops, static_cast<long long>(profile->globalRows),
                static_cast<long long>(profile->tokensPerRow));
  notes.predictionLines.push_back(line);
  double timelineEnd = 0;
  std::string traceError;
  if (cost::predictedTrace(c, p, cluster.name, notes.costTrace, timelineEnd, traceError)) {
    std::snprintf(line, sizeof line,
                  "predicted_trace.json: the step's timeline per pp rank, ending at %.4g s "
                  "(the schedule run with these step times)",
                  timelineEnd);
    notes.predictionLines.push_back(line);
  } else {
    notes.predictionLines.push_back("no predicted timeline: " + traceError);
  }
  if (cluster.device.memoryBytes > 0 && p.peakBytes > cluster.device.memoryBytes)
    notes.predictionLines.push_back(
        "does not fit: the analytic peak is more than the device's " +
        std::to_string(cluster.device.memoryBytes) + " bytes");
  if (c.devices() > cluster.devicesPerNode)
    notes.predictionLines.push_back(
        "placement: tp ranks on consecutive devices (inside a node while tp <= " +
        std::to_string(cluster.devicesPerNode) +
        "), then pp, then dp, as shardrun under mpirun numbers them (consecutive MPI ranks on "
        "one node, as mpirun places them by default)");
  return true;
}

} // namespace shardc
