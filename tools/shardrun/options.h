// shardrun's command line: the options, their parsing and the usage text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace shardrun {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// An error to report and the exit code it maps to.
// Stopped by a signal after saving (--save-on-signal): 128 + the signal's number, as a shell
// reports a process the signal ended (143 for SIGTERM, 130 for SIGINT, 138 for SIGUSR1).
constexpr int kExitSignalBase = 128;

struct Failure {
  std::string message;
  int exitCode;
};

inline Failure error(std::string message) { return {std::move(message), kExitError}; }
inline Failure usageError(std::string message) { return {std::move(message), kExitUsage}; }

// Checkpoints --save keeps: the latest and the one before it, so that a damaged latest one never
// leaves nothing to resume from.
constexpr int kDefaultKeepCheckpoints = 2;

struct Options {
  std::string bundle;
  std::optional<std::string> dataDir;
  std::optional<std::string> outputsDir;
  std::optional<int> threads;
  std::optional<long long> steps;
  // Training loop (only with --steps).
  std::optional<std::string> tokensFile;
  std::optional<uint64_t> seed;
  std::optional<std::string> metricsFile;
  std::optional<std::string> saveDir;
  std::optional<long long> saveEvery;
  std::optional<long long> keepCheckpoints; // --keep-checkpoints K (default kDefaultKeepCheckpoints)
  std::optional<std::string> resumeDir;
  std::optional<long long> resumeStep; // --resume-step N: an older checkpoint --resume DIR keeps
  bool overwrite = false;              // --save may replace a checkpoint it did not resume from
  // --save-on-signal on|off: SIGTERM, SIGINT or SIGUSR1 stop the loop after its step and save
  // (default on with --save; stop_signals.h).
  std::optional<std::string> saveOnSignal;
  // --on-nonfinite stop|skip-step: what a step with a non-finite loss does (default stop).
  std::optional<std::string> onNonFinite;
  std::optional<double> lr;
  std::optional<std::string> schedule;
  std::optional<long long> warmupSteps;
  std::optional<double> minLr;
  std::optional<std::string> exportOnnx;
  // --save-adapters DIR: a LoRA bundle's trained adapters as a PEFT adapter directory.
  std::optional<std::string> saveAdaptersDir;
  bool mergeLora = false; // --merge-lora: --export-onnx merges a LoRA bundle's adapters
  // Several ranks: the communication backend ("local", "mpi", "nccl") and its timeout; how long
  // the ranks wait through long work of one of them (kDefaultIoTimeoutSeconds when absent).
  std::optional<std::string> comm;
  // --device cpu|cuda|auto: where the ranks' memory lives and their kernels run (default cpu).
  std::optional<std::string> device;
  // --bf16-products auto|native|exact: how the CPU kernels multiply two bf16 operands (default
  // auto: native where the CPU multiplies bf16, else exact).
  std::optional<std::string> bf16Products;
  std::optional<double> commTimeout;
  // --comm-overlap on|off: asynchronous collectives on the communication thread (default on).
  std::optional<std::string> commOverlap;
  // --trace FILE: every rank's timeline as a Chrome trace, written at the end of the run.
  std::optional<std::string> traceFile;
  std::optional<double> ioTimeout;
  bool help = false;
};

// Whether stop signals stop the training loop and save (--save, --save-on-signal on).
inline bool savesOnSignal(const Options &options) {
  return options.saveDir && options.saveOnSignal.value_or("on") == "on";
}

extern const char kUsage[];

// Parses argv into `options`; a usage error (exit 2) for anything malformed.
std::optional<Failure> parseArgs(int argc, char **argv, Options *options);

} // namespace shardrun
