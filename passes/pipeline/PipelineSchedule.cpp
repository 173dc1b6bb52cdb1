//===- PipelineSchedule.cpp -------------------------------------------------------------===//
#include "passes/pipeline/PipelineSchedule.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

namespace shardc::pipeline {

std::optional<std::string> scheduleSteps(const std::string &schedule, int64_t stages,
                                         int64_t microBatches,
                                         std::vector<std::vector<Step>> &out,
                                         int64_t virtualStages) {
  out.assign(static_cast<size_t>(stages), {});
  if (schedule == "naive") {
    if (microBatches != 1)
      return "--schedule naive runs one microbatch (layers on different devices, one at a "
             "time); got --micro-batches " +
             std::to_string(microBatches) + " (use gpipe or 1f1b)";
  } else if (schedule == "interleaved") {
    if (virtualStages < 2)
      return "--schedule interleaved needs --virtual-stages 2 or more (model chunks per rank); "
             "got " + std::to_string(virtualStages);
    if (microBatches % stages != 0)
      return "--schedule interleaved runs microbatches in groups of pp = " +
             std::to_string(stages) + "; got --micro-batches " + std::to_string(microBatches) +
             " (use a multiple of " + std::to_string(stages) + ")";
  } else if (schedule != "gpipe" && schedule != "1f1b" && schedule != "zb-h1") {
    return "--schedule '" + schedule + "': expected naive, gpipe, 1f1b, interleaved or zb-h1";
  }
  if (virtualStages != 1 && schedule != "interleaved")
    return "--virtual-stages " + std::to_string(virtualStages) +
           " applies to --schedule interleaved, not " + schedule;
  for (int64_t s = 0; s < stages; ++s) {
    std::vector<Step> &steps = out[static_cast<size_t>(s)];
    if (schedule == "interleaved") {
      // Chunk-step k of each kind: microbatch (k / (p·v))·p + k % p, chunk (k / p) % v
      // (backward: the chunks in reverse).
      const int64_t p = stages, v = virtualStages, total = microBatches * virtualStages;
      auto step = [&](StepKind kind, int64_t k) {
        const int64_t chunk = (k / p) % v;
        steps.push_back({kind, (k / (p * v)) * p + k % p,
                         kind == StepKind::Forward ? chunk : v - 1 - chunk});
      };
      const int64_t warmup = std::min(2 * (p - s - 1) + (v - 1) * p, total);
      int64_t f = 0, b = 0;
      for (; f < warmup; ++f)
        step(StepKind::Forward, f);
      for (; f < total; ++f, ++b) {
        step(StepKind::Forward, f);
        step(StepKind::Backward, b);
      }
      for (; b < total; ++b)
        step(StepKind::Backward, b);
    } else if (schedule == "zb-h1") {
      int64_t f = 0, b = 0, w = 0;
      auto forward = [&] { steps.push_back({StepKind::Forward, f++}); };
      auto backward = [&] { steps.push_back({StepKind::Backward, b++}); };
      auto weight = [&] { steps.push_back({StepKind::Weight, w++}); };
      for (int64_t k = 0; k < std::min(stages - s - 1, microBatches); ++k)
        forward();
      for (int64_t k = 0; k < s && f < microBatches; ++k) { // W deferred
        forward();
        backward();
      }
      while (f < microBatches) {
        forward();
        backward();
        weight();
      }
      while (b < microBatches) {
        backward();
        weight();
      }
      while (w < microBatches) // the deferred W, in the cool-down's bubble
        weight();
    } else if (schedule == "1f1b") {
      const int64_t warmup = std::min(stages - s - 1, microBatches);
      int64_t f = 0, b = 0;
      for (; f < warmup; ++f)
        steps.push_back({StepKind::Forward, f});
      for (; f < microBatches; ++f, ++b) {
        steps.push_back({StepKind::Forward, f});
        steps.push_back({StepKind::Backward, b});
      }
      for (; b < microBatches; ++b)
        steps.push_back({StepKind::Backward, b});
    } else { // naive (one microbatch) and gpipe
      for (int64_t m = 0; m < microBatches; ++m)
        steps.push_back({StepKind::Forward, m});
      for (int64_t m = 0; m < microBatches; ++m)
        steps.push_back({StepKind::Backward, m});
    }
  }
  return std::nullopt;
}

namespace {
// One simulated entry per entry of each stage's list.
void sizeTimes(const std::vector<std::vector<TimelineEntry>> &lists,
               std::vector<std::vector<SimulatedEntry>> &times) {
  times.assign(lists.size(), {});
  for (size_t s = 0; s < lists.size(); ++s)
    times[s].resize(lists[s].size());
}
} // namespace

double idleShare(const std::vector<std::vector<TimelineEntry>> &lists,
                 const std::vector<std::vector<SimulatedEntry>> &times) {
  double makespan = 0, busy = 0;
  for (size_t s = 0; s < lists.size(); ++s)
    for (size_t e = 0; e < lists[s].size(); ++e) {
      makespan = std::max(makespan, times[s][e].end);
      if (!lists[s][e].isTransfer)
        busy += lists[s][e].seconds;
    }
  return makespan > 0 ? 1.0 - busy / (static_cast<double>(lists.size()) * makespan) : 0.0;
}

bool simulate(const std::vector<std::vector<TimelineEntry>> &lists,
              std::vector<std::vector<SimulatedEntry>> &times, std::string &deadlock,
              bool asyncSends) {
  const size_t stages = lists.size();
  sizeTimes(lists, times);
  std::vector<size_t> next(stages, 0);
  std::vector<double> clock(stages, 0.0);
  // Per stage, the halves of its current transfer still open.
  std::vector<bool> sendOpen(stages, false), recvOpen(stages, false);
  std::vector<bool> started(stages, false);
  // Per stage, its asynchronous sends not yet met (in order: its communication thread runs
  // them one after another), each with the time it was posted, and when the last one met.
  std::vector<std::deque<std::pair<size_t, double>>> pending(stages);
  std::vector<double> commFree(stages, 0.0);
  auto isAsync = [&](const TimelineEntry &e) {
    return asyncSends && e.isTransfer && e.sendTo >= 0 && e.recvFrom < 0;
  };
  auto start = [&](size_t s) {
    if (started[s] || next[s] >= lists[s].size())
      return;
    const TimelineEntry &e = lists[s][next[s]];
    started[s] = true;
    times[s][next[s]].start = clock[s];
    sendOpen[s] = e.isTransfer && e.sendTo >= 0;
    recvOpen[s] = e.isTransfer && e.recvFrom >= 0;
  };
  auto finish = [&](size_t s, double at) {
    times[s][next[s]].end = at;
    clock[s] = at;
    ++next[s];
    started[s] = false;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t s = 0; s < stages; ++s) {
      start(s);
      if (next[s] >= lists[s].size())
        continue;
      const TimelineEntry &e = lists[s][next[s]];
      if (!e.isTransfer) {
        finish(s, clock[s] + e.seconds);
        progress = true;
      } else if (isAsync(e)) {
        // Handed to the communication thread; the stage goes on.
        pending[s].push_back({static_cast<size_t>(e.sendTo), clock[s]});
        sendOpen[s] = false;
        finish(s, clock[s]);
        progress = true;
      }
    }
    // A stage's oldest asynchronous send meets its receiver's open receive from it.
    for (size_t s = 0; s < stages; ++s) {
      if (pending[s].empty())
        continue;
      const auto [t, posted] = pending[s].front();
      if (t >= stages || next[t] >= lists[t].size() || !started[t] || !recvOpen[t] ||
          lists[t][next[t]].recvFrom != static_cast<int64_t>(s) || !pending[t].empty())
        continue;
      const double at = std::max({posted, commFree[s], clock[t]});
      recvOpen[t] = false;
      clock[t] = at;
      commFree[s] = at;
      pending[s].pop_front();
      progress = true;
    }
    // A send from s to t meets t's receive from s when both are open now (a stage's own
    // transfer waits for its asynchronous sends first).
    for (size_t s = 0; s < stages; ++s) {
      if (next[s] >= lists[s].size() || !sendOpen[s] || !pending[s].empty())
        continue;
      const size_t t = static_cast<size_t>(lists[s][next[s]].sendTo);
      if (t >= stages || next[t] >= lists[t].size() || !started[t] || !recvOpen[t] ||
          lists[t][next[t]].recvFrom != static_cast<int64_t>(s) || !pending[t].empty())
        continue;
      const double at = std::max({clock[s], commFree[s], clock[t], commFree[t]});
      sendOpen[s] = false;
      recvOpen[t] = false;
      // The halves meet at `at`; each side's clock moves there (waiting is idle time).
      clock[s] = at;
      clock[t] = at;
      progress = true;
    }
    for (size_t s = 0; s < stages; ++s)
      if (next[s] < lists[s].size() && started[s] && lists[s][next[s]].isTransfer &&
          !sendOpen[s] && !recvOpen[s] && pending[s].empty()) {
        finish(s, std::max(clock[s], commFree[s]));
        progress = true;
      }
  }
  bool done = true;
  deadlock.clear();
  for (size_t s = 0; s < stages; ++s)
    if (next[s] < lists[s].size() || !pending[s].empty()) {
      done = false;
      deadlock += (deadlock.empty() ? "" : ", ") + std::string("stage ") + std::to_string(s) +
                  " at entry " + std::to_string(next[s]);
    } else if (!times[s].empty()) {
      // The run ends once the last send has met its receiver.
      times[s].back().end = std::max(times[s].back().end, commFree[s]);
    }
  return done;
}

bool simulatePostedSends(const std::vector<std::vector<TimelineEntry>> &lists,
                         std::vector<std::vector<SimulatedEntry>> &times, std::string &deadlock) {
  const size_t stages = lists.size();
  sizeTimes(lists, times);
  std::vector<size_t> next(stages, 0);
  std::vector<double> clock(stages, 0.0);
  std::vector<bool> posted(stages, false);
  // [from][to]: the post times of the messages not yet received.
  std::vector<std::vector<std::deque<double>>> inFlight(stages,
                                                        std::vector<std::deque<double>>(stages));
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t s = 0; s < stages; ++s)
      while (next[s] < lists[s].size()) {
        const TimelineEntry &e = lists[s][next[s]];
        SimulatedEntry &t = times[s][next[s]];
        if (!e.isTransfer) {
          t = {clock[s], clock[s] + e.seconds};
        } else {
          if (e.sendTo >= 0 && !posted[s]) {
            inFlight[s][static_cast<size_t>(e.sendTo)].push_back(clock[s]);
            posted[s] = true;
            t.start = clock[s];
            progress = true;
          }
          if (e.recvFrom >= 0) {
            auto &queue = inFlight[static_cast<size_t>(e.recvFrom)][s];
            if (queue.empty())
              break;
            if (e.sendTo < 0)
              t.start = clock[s];
            clock[s] = std::max(clock[s], queue.front());
            queue.pop_front();
          } else if (e.sendTo < 0) {
            t.start = clock[s];
          }
          t.end = clock[s];
          posted[s] = false;
        }
        clock[s] = t.end;
        ++next[s];
        progress = true;
      }
  }
  deadlock.clear();
  bool done = true;
  for (size_t s = 0; s < stages; ++s)
    if (next[s] < lists[s].size()) {
      done = false;
      deadlock += (deadlock.empty() ? "" : ", ") + std::string("stage ") + std::to_string(s) +
                  " at entry " + std::to_string(next[s]);
    }
  return done;
}

bool splitsWeightGradients(const std::string &schedule) { return schedule == "zb-h1"; }

std::string stepsText(const std::vector<Step> &steps, bool chunks) {
  const bool interleaved = chunks || std::any_of(steps.begin(), steps.end(),
                                                 [](const Step &st) { return st.chunk != 0; });
  std::string text;
  for (const Step &step : steps)
    text += (text.empty() ? "" : " ") +
            std::string(step.kind == StepKind::Forward    ? "F"
                        : step.kind == StepKind::Backward ? "B"
                                                          : "W") +
            std::to_string(step.microBatch) +
            (step.chunk != 0 || interleaved ? "." + std::to_string(step.chunk) : "");
  return text;
}

} // namespace shardc::pipeline
