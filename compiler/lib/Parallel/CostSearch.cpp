//===- CostSearch.cpp -------------------------------------------------------------------===//
#include "shardc/Parallel/CostSearch.h"

#include "shardc/Support/Diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace shardc {

namespace {

std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      out.push_back(d);
      if (d != n / d)
        out.push_back(n / d);
    }
  std::sort(out.begin(), out.end());
  return out;
}

constexpr int64_t kMaxSearchedMicroBatches = 64;

int rematRank(const std::string &remat) {
  return remat == "none" ? 0 : remat == "selective" ? 1 : 2;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  return buf;
}

std::string shortText(const cost::Prediction &p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "step %.4g s, %.4g tokens/s, %.1f%% MFU, peak %s (analytic)",
                p.stepSeconds, p.tokensPerSecond, 100 * p.mfu, gib(p.peakBytes).c_str());
  return buf;
}

} // namespace

CostSearchResult searchPlans(StepProfiler &profiler, const cost::Cluster &cluster,
                             const CompileOptions &opts, int64_t devices) {
  CostSearchResult result;
  const bool rematFixed = opts.train.remat != "none" && opts.train.remat != "auto";
  const uint64_t memory =
      opts.gpuMemoryBytes ? opts.gpuMemoryBytes : cluster.device.memoryBytes;
  const ParallelStrategy &fixed = opts.strategy;
  for (int64_t tp : divisorsOf(devices)) {
    // tp inside a node, tiling it (a group of 6 on nodes of 8 would straddle two).
    if (fixed.fixedTp ? tp != fixed.fixedTp
                      : tp > cluster.devicesPerNode || cluster.devicesPerNode % tp != 0)
      continue;
    for (bool sp : {false, true}) {
      if ((sp && tp == 1) || (fixed.fixedSp >= 0 && sp != (fixed.fixedSp == 1)))
        continue;
      std::vector<std::string> modes = {rematFixed ? opts.train.remat : "none"};
      for (size_t mode = 0; mode < modes.size(); ++mode) {
        std::string refusal;
        const cost::StepProfile *profile = profiler.profile(static_cast<int>(tp), sp,
                                                            modes[mode], refusal);
        if (!profile) {
          if (result.firstRefusal.empty())
            result.firstRefusal = "tp=" + std::to_string(tp) + (sp ? ",sp=1" : "") +
                                  (modes[mode] != "none" ? " remat " + modes[mode] : "") + ": " +
                                  refusal;
          continue;
        }
        const int64_t rows = profile->globalRows;
        result.globalRows = rows;
        // The model's repeated units (a truncated profile's stand for several each).
        int64_t units = 0;
        for (size_t u = 0; u < profile->units.size(); ++u)
          units += profile->unitRepeats.empty() ? 1 : profile->unitRepeats[u];
        bool someOverMemory = false;
        for (int64_t pp : divisorsOf(devices / tp)) {
          if ((pp > 1 && pp > units) || (fixed.fixedPp && pp != fixed.fixedPp))
            continue;
          const int64_t dp = devices / tp / pp;
          if (rows % dp != 0) {
            ++result.notDividing;
            continue;
          }
          const int64_t replicaRows = rows / dp;
          std::vector<int64_t> counts =
              opts.microBatchesGiven ? std::vector<int64_t>{opts.microBatches}
                                     : divisorsOf(replicaRows);
          for (int64_t m : counts) {
            // The compiler unrolls the microbatches: more than kMaxSearchedMicroBatches make
            // programs too large to compile in seconds (--predict-only costs any).
            if (!opts.microBatchesGiven && !opts.predictOnly && m > kMaxSearchedMicroBatches)
              continue;
            if (replicaRows % m != 0) {
              ++result.notDividing;
              continue;
            }
            // The schedules that can run m microbatches on pp stages (gpipe: 1f1b's time with
            // more memory, never better: not costed unless asked for).
            std::vector<std::pair<std::string, int64_t>> schedules;
            if (pp == 1) {
              schedules.push_back({"", 1});
            } else if (opts.scheduleGiven) {
              schedules.push_back({opts.schedule, opts.virtualStages});
            } else if (m == 1) {
              schedules.push_back({"naive", 1});
            } else {
              schedules.push_back({"1f1b", 1});
              schedules.push_back({"zb-h1", 1});
              if (m % pp == 0)
                for (int64_t v : divisorsOf(units))
                  if (v >= 2 && pp * v <= units)
                    schedules.push_back({"interleaved", v});
            }
            for (const auto &[schedule, v] : schedules)
              for (int zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero) {
                if (fixed.fixedZero >= 0 && zero != fixed.fixedZero)
                  continue;
                cost::Candidate c;
                c.dp = dp;
                c.tp = tp;
                c.pp = pp;
                c.sequenceParallel = sp;
                c.zero = zero;
                c.remat = modes[mode];
                c.microBatches = m;
                c.schedule = schedule;
                c.virtualStages = v;
                cost::Prediction p;
                std::string why;
                if (!cost::predictStep(*profile, cluster, c, p, why)) {
                  ++result.notDividing;
                  continue;
                }
                ++result.costed;
                if (memory > 0 && p.peakBytes > memory) {
                  ++result.overMemory;
                  someOverMemory = true;
                  continue;
                }
                result.ranked.push_back({c, p});
              }
          }
        }
        // Recomputation only where keeping everything does not fit.
        if (!rematFixed && mode == 0 && someOverMemory) {
          modes.push_back("selective");
          modes.push_back("full");
        }
      }
    }
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const CostedPlan &a, const CostedPlan &b) {
                     return std::make_tuple(a.prediction.stepSeconds, a.candidate.zero,
                                            rematRank(a.candidate.remat),
                                            a.candidate.microBatches) <
                            std::make_tuple(b.prediction.stepSeconds, b.candidate.zero,
                                            rematRank(b.candidate.remat),
                                            b.candidate.microBatches);
                   });
  return result;
}

CompileOptions optionsFor(const CompileOptions &opts, const cost::Candidate &plan) {
  CompileOptions o = opts;
  o.strategy = ParallelStrategy();
  o.strategy.dp = static_cast<int>(plan.dp);
  o.strategy.tp = static_cast<int>(plan.tp);
  o.strategy.pp = static_cast<int>(plan.pp);
  o.strategy.sequenceParallel = plan.sequenceParallel;
  o.strategy.zero = plan.zero;
  o.strategy.automatic = false;
  o.strategyText = o.strategy.canonical();
  o.gpus = static_cast<int>(plan.devices());
  o.microBatches = plan.microBatches;
  o.train.remat = plan.remat;
  o.train.rematUnits = -1;
  o.schedule = plan.pp > 1 ? plan.schedule : "1f1b";
  o.virtualStages = plan.pp > 1 ? plan.virtualStages : 1;
  return o;
}

bool chooseByCost(const CompileOptions &opts, const cost::Cluster &cluster,
                  const CostSearchResult &result, int64_t devices, size_t finalists,
                  const std::function<uint64_t(const CostedPlan &, std::string &)> &plannedPeak,
                  cost::Candidate &chosen, std::vector<std::string> &decision) {
  const uint64_t memory =
      opts.gpuMemoryBytes ? opts.gpuMemoryBytes : cluster.device.memoryBytes;
  decision.push_back(
      "auto (cost model on " + cluster.name + ", " + std::to_string(devices) + " devices of " +
      gib(memory) + "): " + std::to_string(result.costed) + " candidates costed, " +
      std::to_string(result.overMemory) + " over memory (analytic), " +
      std::to_string(result.notDividing) +
      " shapes that do not divide; the fastest predicted whose planned peak fits");
  size_t chosenAt = result.ranked.size();
  for (size_t i = 0; i < result.ranked.size() && i < finalists; ++i) {
    const CostedPlan &plan = result.ranked[i];
    std::string refusal;
    const uint64_t peak = plannedPeak(plan, refusal);
    if (peak == 0) {
      decision.push_back("rejected " + plan.candidate.text() + ": " + refusal);
      continue;
    }
    if (memory > 0 && peak > memory) {
      decision.push_back("rejected " + plan.candidate.text() + ": planned peak " + gib(peak) +
                         " per device (analytic " + gib(plan.prediction.peakBytes) +
                         ") does not fit");
      continue;
    }
    chosen = plan.candidate;
    chosenAt = i;
    decision.push_back("chose " + plan.candidate.text() + ": " +
                       cost::predictionText(plan.prediction) +
                       (opts.predictOnly ? std::string("; not planned (--predict-only)")
                                         : "; planned peak " + gib(peak) + " per device"));
    break;
  }
  if (chosenAt == result.ranked.size()) {
    std::string why = result.ranked.empty()
                          ? (result.costed > 0 ? "no candidate fits in " + gib(memory)
                                               : "no candidate could be costed" +
                                                     (result.firstRefusal.empty()
                                                          ? std::string()
                                                          : "; " + result.firstRefusal))
                          : "none of the " + std::to_string(std::min(finalists, result.ranked.size())) +
                                " fastest fits when planned";
    printError(opts.model + ": --strategy auto --cluster " + opts.cluster + ": " + why);
    return false;
  }
  size_t shown = 0;
  const double best = result.ranked[chosenAt].prediction.stepSeconds;
  for (size_t i = 0; i < result.ranked.size() && shown < 5; ++i) {
    if (i == chosenAt)
      continue;
    const CostedPlan &plan = result.ranked[i];
    char delta[32];
    std::snprintf(delta, sizeof delta, "%+.1f%%", 100 * (plan.prediction.stepSeconds / best - 1));
    decision.push_back("alternative " + std::to_string(++shown) + ": " + plan.candidate.text() +
                       ": " + shortText(plan.prediction) + " (" + delta + ")");
  }
  return true;
}

} // namespace shardc
