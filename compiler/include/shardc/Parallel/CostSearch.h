//===- CostSearch.h - --strategy auto with --cluster: the fastest predicted plan that fits -===//
//
// Candidates: every tp dividing the devices and a node's devices (a tp group on one node;
// with and without sp),
// every pp dividing the rest up to the model's repeated layers, dp the rest (dividing the
// batch), ZeRO 0-3 (dp > 1), every microbatch count dividing a replica's rows (fixed by
// --micro-batches when given), the schedules that can run it (gpipe, 1f1b, zb-h1, interleaved
// with every v dividing a stage's layers; naive with one microbatch; fixed by --schedule when
// given), and remat none, selective and full (fixed by --remat when given). Each is costed
// from the profile of its (tp, sp, remat) (StepProfiler.h) by the cost model (Cost/CostModel.h),
// in microseconds; pruned: shapes that do not divide, plans whose analytic memory exceeds the
// device's; the fastest few are then checked with the real memory planner (their planned peak,
// stage by stage, must fit), and the fastest that fits is chosen. Remat modes are profiled
// only when some plan without recomputation does not fit.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PARALLEL_COSTSEARCH_H
#define SHARDC_PARALLEL_COSTSEARCH_H

#include "shardc/Cost/Cluster.h"
#include "shardc/Cost/CostModel.h"
#include "shardc/Parallel/CompileOptions.h"
#include "shardc/Parallel/StepProfiler.h"

#include <functional>
#include <string>
#include <vector>

namespace shardc {

struct CostedPlan {
  cost::Candidate candidate;
  cost::Prediction prediction;
};

struct CostSearchResult {
  std::vector<CostedPlan> ranked; // fitting (analytic), fastest first
  size_t costed = 0;              // candidates the cost model costed
  size_t overMemory = 0;          // of them, over the device's memory (analytic)
  size_t notDividing = 0;         // shapes that do not divide (not costed)
  std::string firstRefusal;       // a profile the compiler refused, "tp=4: why"
  int64_t globalRows = 0;         // the batch's rows (from the profiles; 0: none compiled)
};

// Costs every candidate on `devices` devices (the options' fixed choices kept).
CostSearchResult searchPlans(StepProfiler &profiler, const cost::Cluster &cluster,
                             const CompileOptions &opts, int64_t devices);

// The options that compile `plan` (explicit strategy, microbatches, schedule, remat).
CompileOptions optionsFor(const CompileOptions &opts, const cost::Candidate &plan);

// Picks the fastest of `result` whose real planned peak fits (`plannedPeak` returns it, or 0
// when the compiler refuses the plan, with `refusal`), checking at most `finalists`; writes
// the decision lines. False (with the error printed) when none fits.
bool chooseByCost(const CompileOptions &opts, const cost::Cluster &cluster,
                  const CostSearchResult &result, int64_t devices, size_t finalists,
                  const std::function<uint64_t(const CostedPlan &, std::string &)> &plannedPeak,
                  cost::Candidate &chosen, std::vector<std::string> &decision);

} // namespace shardc

#endif
