// The per-step metrics file of a training run (--metrics FILE.jsonl): one JSON object per line,
//   {"step": 12, "loss": 1.23456789, "lr": 0.001, "step_time_ms": 3.217}
// loss and lr with 9 significant digits (%.9g: enough to round-trip an f32, so two runs'
// losses are bit-identical exactly when the strings are equal); a non-finite loss is written
// as null to keep every line valid JSON. Each line is flushed as it is written, so the file
// is complete up to the last finished step even if the run is killed.
//
// A run of several ranks adds what rank 0's communicator sent during the step, per collective:
//   ..., "comm_bytes": {"all_reduce": 4096, "reduce_scatter": 0, "all_gather": 0}}
// A run that skips steps with a non-finite loss (--on-nonfinite skip-step) adds how many it
// skipped so far: ..., "skipped_steps": 1}
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace shardc::runtime {

class MetricsLog {
public:
  MetricsLog() = default;
  ~MetricsLog();
  MetricsLog(const MetricsLog &) = delete;
  MetricsLog &operator=(const MetricsLog &) = delete;

  // Creates (or truncates) `path`.
  Status open(const std::string &path);
  // `comm`: the step's bytes sent per collective, or null (a single-rank run: no such field).
  // `skippedSteps` >= 0 (under --on-nonfinite skip-step): the steps skipped so far.
  // `lossScale` (dynamic loss scaling, --precision fp16): the scale the step used and whether
  // its gradients overflowed (the step skipped); absent when null.
  struct LossScale {
    float scale = 0;
    bool overflow = false;
  };
  Status write(int64_t step, float loss, float lr, double stepTimeMs,
               const CommCounters *comm = nullptr, int64_t skippedSteps = -1,
               const LossScale *lossScale = nullptr);
  // Closes the file, reporting a failed final write.
  Status close();

  // One line without the newline; exposed for tests.
  static std::string formatLine(int64_t step, float loss, float lr, double stepTimeMs,
                                const CommCounters *comm = nullptr, int64_t skippedSteps = -1,
                                const LossScale *lossScale = nullptr);

private:
  std::FILE *file_ = nullptr;
  std::string path_;
};

} // namespace shardc::runtime
