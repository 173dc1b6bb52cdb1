//===- CommandLine.h - shardc's flags ---------------------------------------------------===//
#ifndef SHARDC_TOOLS_SHARDC_COMMANDLINE_H
#define SHARDC_TOOLS_SHARDC_COMMANDLINE_H

#include "Strategy.h"

#include "shardc/Autodiff/TrainStep.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardc::driver {

enum class Mode { Train, Forward };

struct Options {
  std::string model;
  std::string output;
  Mode mode = Mode::Train;
  bool emitMlir = false;
  std::string dumpIrDir;
  bool withoutWeights = false;
  std::map<std::string, std::vector<int64_t>> inputShapes;
  TrainStepOptions train;
  bool weightDecayGiven = false; // else PyTorch's default for the optimizer
  // Parallelism.
  int gpus = 1;
  std::string strategyText;   // as given; "auto" by default with --gpus > 1
  ParallelStrategy strategy;  // parsed from strategyText for `gpus`
  uint64_t gpuMemoryBytes = 0; // --gpu-memory; 0: unlimited
  double bucketMb = 25.0;
  // --comm-overlap: collectives run asynchronously, overlapping the ops before their first
  // reader (the plan-memory pass's overlap-collectives).
  bool commOverlap = true;
  bool fuseAttention = false; // --fuse-attention on: shardc-fuse-attention after import
  std::string fsdpUnit;
  // --micro-batches: each device's rows run as this many microbatches per step, gradients
  // accumulated before the reduction and the update.
  int64_t microBatches = 1;
  // --shard REGEX=SPEC, in order: tensor-parallel layout overrides per parameter.
  std::vector<std::string> shardOverrides;
  bool explain = false;
};

enum class ParseResult { Ok, ExitSuccess, UsageError };

// Parses argv; prints --help/--version itself, and usage errors as
// "shardc: error: ..." plus a hint, to stderr.
ParseResult parseCommandLine(int argc, char **argv, Options &options);

} // namespace shardc::driver

#endif
