//===- PredictedTrace.cpp ---------------------------------------------------------------===//
#include "shardc/Cost/PredictedTrace.h"

#include "passes/pipeline/PipelineSchedule.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <tuple>

namespace shardc::cost {

using pipeline::Step;
using pipeline::StepKind;

bool predictedTrace(const Candidate &c, const Prediction &p, const std::string &clusterName,
                    std::string &out, double &simulatedSeconds, std::string &why) {
  const int64_t P = c.pp, v = c.pp > 1 ? c.virtualStages : 1, m = c.microBatches;
  if (static_cast<int64_t>(p.chunks.size()) != P) {
    why = "the prediction has no per-stage times";
    return false;
  }
  std::vector<std::vector<Step>> steps;
  // One stage: its microbatches one after another (F0 B0 F1 B1 ...), as 1F1B on one stage.
  const std::string schedule = c.pp > 1 ? c.schedule : "1f1b";
  if (auto error = pipeline::scheduleSteps(schedule, P, m, steps, v)) {
    why = *error;
    return false;
  }
  const bool splitW = pipeline::splitsWeightGradients(schedule);
  const int64_t Q = P * v; // the model's chunks
  auto chunkOf = [&](int64_t rank, int64_t c) { return c * P + rank; };
  auto seconds = [&](int64_t rank, const Step &st) {
    const Prediction::ChunkSeconds &cs = p.chunks[rank][st.chunk];
    if (st.kind == StepKind::Forward)
      return cs.forward;
    // A split backward: B (the input gradients) and W (the weight gradients) each half of it.
    return splitW ? cs.backward / 2 : cs.backward;
  };
  // When each step ends: (kind, microbatch, model chunk) -> seconds.
  std::map<std::tuple<int, int64_t, int64_t>, double> done;
  auto key = [](StepKind k, int64_t mb, int64_t q) {
    return std::make_tuple(static_cast<int>(k), mb, q);
  };
  std::vector<size_t> next(P, 0);
  std::vector<double> freeAt(P, 0);
  struct Placed {
    Step step;
    double start, end, arrival = -1, transfer = 0;
  };
  std::vector<std::vector<Placed>> placed(P);
  size_t remaining = 0;
  for (const auto &list : steps)
    remaining += list.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t r = 0; r < P; ++r) {
      while (next[r] < steps[r].size()) {
        const Step &st = steps[r][next[r]];
        const int64_t q = chunkOf(r, st.chunk);
        double ready = freeAt[r], transfer = 0;
        bool waiting = false;
        auto need = [&](StepKind k, int64_t chunk, double t) {
          auto it = done.find(key(k, st.microBatch, chunk));
          if (it == done.end()) {
            waiting = true;
            return;
          }
          ready = std::max(ready, it->second + t);
          transfer = t;
        };
        if (st.kind == StepKind::Forward && q > 0)
          need(StepKind::Forward, q - 1, p.chunks[r][st.chunk].transferIn);
        else if (st.kind == StepKind::Backward && q + 1 < Q)
          need(StepKind::Backward, q + 1, p.chunks[(q + 1) % P][(q + 1) / P].transferIn);
        else if (st.kind == StepKind::Backward)
          need(StepKind::Forward, q, 0);
        else if (st.kind == StepKind::Weight)
          need(StepKind::Backward, q, 0);
        if (waiting)
          break;
        Placed pl{st, ready, ready + seconds(r, st)};
        if (transfer > 0) {
          pl.arrival = ready;
          pl.transfer = transfer;
        }
        placed[r].push_back(pl);
        freeAt[r] = pl.end;
        done[key(st.kind, st.microBatch, q)] = pl.end;
        ++next[r];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      why = "the schedule's steps wait on each other";
      return false;
    }
  }

  using nlohmann::json;
  json events = json::array();
  auto meta = [&](const char *what, int64_t pid, int tid, const std::string &name) {
    events.push_back({{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  auto slice = [&](const std::string &name, const char *cat, int64_t pid, int tid, double start,
                   double end, json args) {
    events.push_back({{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", pid}, {"tid", tid},
                      {"ts", start * 1e6}, {"dur", std::max(0.0, end - start) * 1e6},
                      {"args", std::move(args)}});
  };
  simulatedSeconds = 0;
  for (int64_t r = 0; r < P; ++r) {
    const std::string ranks =
        c.tp * c.dp > 1 ? " (" + std::to_string(c.tp * c.dp) + " ranks alike: tp x dp)" : "";
    meta("process_name", r, 0,
         (P > 1 ? "pp rank " + std::to_string(r) : std::string("every rank")) + " (predicted)" +
             ranks);
    meta("process_sort_index", r, 0, std::to_string(r));
    meta("thread_name", r, 0, "steps");
    meta("thread_name", r, 1, "transfers");
    meta("thread_name", r, 2, "dp collectives");
    double lastBackward = 0;
    for (const Placed &pl : placed[r]) {
      const Prediction::ChunkSeconds &cs = p.chunks[r][pl.step.chunk];
      const bool fwd = pl.step.kind == StepKind::Forward;
      const double share = fwd || !splitW ? 1.0 : 0.5;
      json args = {{"tp collectives (s)", (fwd ? cs.tpForward : cs.tpBackward) * share},
                   {"model chunk", chunkOf(r, pl.step.chunk)}};
      if (!fwd && cs.recompute > 0)
        args["recomputation (s)"] = cs.recompute * share;
      slice(pipeline::stepsText({pl.step}, v > 1), "step", r, 0, pl.start, pl.end,
            std::move(args));
      if (pl.arrival >= 0)
        slice(std::string(fwd ? "activations in" : "gradients in") + " (" +
                  pipeline::stepsText({pl.step}, v > 1) + ")",
              "transfer", r, 1, pl.arrival - pl.transfer, pl.arrival, json::object());
      if (!fwd)
        lastBackward = std::max(lastBackward, pl.end);
    }
    const double exposed = p.rankExposedSeconds.empty() ? 0 : p.rankExposedSeconds[r];
    const double reduce = p.rankReduceSeconds.empty() ? 0 : p.rankReduceSeconds[r];
    const double update = p.rankUpdateSeconds.empty() ? 0 : p.rankUpdateSeconds[r];
    double end = lastBackward + exposed;
    if (reduce > 0)
      slice(c.zero >= 1 ? "gradient reduce-scatter (ZeRO) and parameter gathers"
                        : "gradient all-reduce",
            "collective", r, 2, std::max(0.0, end - std::max(reduce, exposed)), end,
            {{"exposed (s)", exposed}});
    if (update > 0)
      slice("optimizer update", "step", r, 0, end, end + update, json::object());
    simulatedSeconds = std::max(simulatedSeconds, end + update);
  }
  json trace = {
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"plan", c.text()},
        {"cluster", clusterName},
        {"time", "predicted seconds (the cost model), 1 us = 1 us"},
        {"predicted_step_seconds", p.stepSeconds},
        {"timeline_end_seconds", simulatedSeconds},
        {"assumptions",
         std::string("each step as long as the prediction's per-chunk forward or backward pass; "
                     "transfers posted; the dp reduction overlapping the last backward") +
             (splitW ? "; B and W each half of a backward pass" : "")}}},
      {"traceEvents", std::move(events)}};
  out = trace.dump();
  return true;
}

} // namespace shardc::cost
