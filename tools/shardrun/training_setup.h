// What every rank of a training run (shardrun --steps) shares, prepared once per process before
// the ranks start: the lr schedule, the seed, the checkpoint to resume from and, in the process
// that runs rank 0 (which alone writes files), the ONNX exporter and the metrics file.
#pragma once

#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/checkpoint_lock.h"
#include "runtime/export/onnx_export.h"
#include "runtime/loader/bundle.h"
#include "runtime/training/lr_schedule.h"
#include "runtime/training/metrics_log.h"
#include "tools/shardrun/options.h"
#include "tools/shardrun/peft_adapters.h"

#include <cstdint>
#include <memory>
#include <optional>

namespace shardrun {

struct TrainingRun {
  const Options *options = nullptr;
  const shardc::runtime::LoadedBundle *bundle = nullptr;
  shardc::runtime::LrSchedule schedule;
  uint64_t seed = 0; // --seed, or the checkpoint's
  // --resume: loaded once and only read by the ranks, each of which takes its shards of it.
  std::optional<shardc::runtime::CheckpointContents> checkpoint;
  // Rank 0's process only.
  std::unique_ptr<shardc::runtime::OnnxExporter> exporter; // --export-onnx
  std::optional<PeftAdapterLayout> adapters;                // --save-adapters
  // XXH3-64 of the bundle's frozen parameters by name (a LoRA run's base; training_setup.cpp),
  // with --save or --resume: recorded in the checkpoints, checked on resume.
  std::optional<uint64_t> frozenWeightsChecksum;
  shardc::runtime::MetricsLog metrics;                     // open with --metrics
  std::unique_ptr<shardc::runtime::CheckpointDirLock> saveLock; // --save DIR, held to the end
};

// Checks that the bundle's programs are training steps the loop can drive, alike on every rank
// (same carried tensors, sharded alike: the ranks gather them together), and prepares `run`.
// Checked here rather than after training: a bundle that cannot export, a destination or a
// metrics file that cannot be written, a checkpoint that does not fit.
std::optional<Failure> prepareTraining(const Options &options,
                                       const shardc::runtime::LoadedBundle &bundle, bool hostsRank0,
                                       TrainingRun *run);

} // namespace shardrun
