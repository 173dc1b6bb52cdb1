// shardrun: executes a compiled shardc bundle.
//
//   shardrun BUNDLE --data DIR --outputs DIR2 [--threads N]
//   shardrun TRAIN_BUNDLE --steps K (--data DIR | --tokens FILE.bin) [loop options]
//            [--export-onnx FILE]
//
// Reads each graph input from DIR/<name>.npy, runs the program, writes each graph output to
// DIR2/<name>.npy (names mapped to file names by tensorNpyFileName). With --steps, a training
// bundle runs the training loop (runtime/training): K steps on batches from DIR or a token
// file, with an lr schedule, metrics, checkpoints and resume, and can write the trained model
// as ONNX at the end (runtime/export). Errors are one line,
// "shardrun: error: ...", exit 1; usage errors exit 2.
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/data/npy.h"
#include "runtime/data/tensor_file_name.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/export/onnx_export.h"
#include "runtime/memory/memory_report.h"
#include "runtime/memory/memory_tracker.h"
#include "runtime/program/bundle.h"
#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"
#include "runtime/support/status.h"
#include "runtime/training/batch_source.h"
#include "runtime/training/lr_schedule.h"
#include "runtime/training/metrics_log.h"
#include "runtime/training/progress.h"
#include "runtime/training/training_loop.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using namespace shardc::runtime;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: shardrun BUNDLE --data DIR --outputs DIR2 [--threads N]\n"
    "       shardrun TRAIN_BUNDLE --steps K (--data DIR | --tokens FILE.bin) [options]\n"
    "\n"
    "Runs a bundle compiled by shardc on inputs stored as NumPy .npy files.\n"
    "\n"
    "  BUNDLE          the bundle directory written by shardc (holds program.pb)\n"
    "  --data DIR      directory with one .npy file per graph input\n"
    "  --outputs DIR2  directory to write one .npy file per graph output (created if needed)\n"
    "  --threads N     threads for the CPU kernels' matrix products (default: OpenBLAS's own\n"
    "                  choice, usually one per core)\n"
    "\n"
    "Training bundles (shardc --mode train). Without --steps: one step, every input of the\n"
    "step (batch, parameters, optimizer state, step, lr) read from DIR. With --steps: the\n"
    "training loop, starting from the parameters compiled into the bundle:\n"
    "  --steps K          run until K steps are done\n"
    "  --data DIR         batches: DIR/<batch input>.npy holds N rows (a multiple of the batch\n"
    "                     size B); step k uses rows [(k-1)B, kB) modulo N\n"
    "  --tokens FILE.bin  batches: random windows of a uint16 token file; the model's first\n"
    "                     i64[B x T] batch input gets the tokens, the second the targets\n"
    "  --seed S           seed of the token windows and dropout masks (default 0; kept in\n"
    "                     checkpoints)\n"
    "  --lr X             peak learning rate (default 1e-3)\n"
    "  --schedule constant|cosine  lr schedule (default constant); cosine decays to --min-lr\n"
    "  --warmup-steps N   linear warmup from 0 to --lr over the first N steps (default 0)\n"
    "  --min-lr X         final lr of the cosine schedule (default 0)\n"
    "  --metrics FILE     write one JSON line per step: step, loss, lr, step_time_ms\n"
    "  --save DIR         write a checkpoint to DIR at the end (and every --save-every N steps)\n"
    "  --save-every N     checkpoint every N steps (needs --save)\n"
    "  --resume DIR       continue from the checkpoint in DIR up to --steps\n"
    "  --outputs DIR2     optional with --steps: write the final parameters as NAME.npy\n"
    "  --export-onnx FILE write the compiled ONNX model with the trained parameters to FILE\n"
    "                     at the end (FILE.data beside it holds them if FILE would reach 2 GiB)\n"
    "  -h, --help      print this help and exit\n"
    "\n"
    "A tensor's file name is its name with every character outside [A-Za-z0-9._-] replaced by\n"
    "'_' plus '.npy' (graph input 'onnx::Add_5' is read from DIR/onnx__Add_5.npy).\n"
    "Supported .npy dtypes: <f4 (float32), <i8 (int64), <i4 (int32), |b1 (bool).\n";

// An error to report and the exit code it maps to.
struct Failure {
  std::string message;
  int exitCode;
};

Failure error(std::string message) { return {std::move(message), kExitError}; }
Failure usageError(std::string message) { return {std::move(message), kExitUsage}; }

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
  std::optional<std::string> resumeDir;
  std::optional<double> lr;
  std::optional<std::string> schedule;
  std::optional<long long> warmupSteps;
  std::optional<double> minLr;
  std::optional<std::string> exportOnnx;
  bool help = false;
};

// Flags that only make sense for the training loop, for the "needs --steps" check.
const char *const kLoopFlags[] = {"--tokens",       "--seed",   "--metrics",    "--save",
                                  "--save-every",   "--resume", "--lr",         "--schedule",
                                  "--warmup-steps", "--min-lr", "--export-onnx"};

// Parses a positive decimal integer no larger than `max`.
bool parsePositive(const std::string &text, long long max, long long *out) {
  if (text.empty() || text.size() > 18)
    return false;
  long long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > max)
    return false;
  *out = value;
  return true;
}

// Parses a non-negative decimal integer that fits in 64 bits unsigned.
bool parseUnsigned(const std::string &text, uint64_t *out) {
  if (text.empty() || text.size() > 20)
    return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10)
      return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

// Parses a finite, non-negative decimal or exponent number ("3e-4").
bool parseRate(const std::string &text, double *out) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value < 0)
    return false;
  *out = value;
  return true;
}

// Combinations of the training-loop flags that cannot work, whatever the bundle.
std::optional<Failure> checkLoopArgs(const Options &options) {
  if (options.dataDir && options.tokensFile)
    return usageError("give either --data DIR or --tokens FILE.bin, not both");
  if (options.saveEvery && !options.saveDir)
    return usageError("--save-every needs --save DIR");
  if (options.minLr && options.schedule.value_or("constant") != "cosine")
    return usageError("--min-lr applies to --schedule cosine");
  return std::nullopt;
}

std::optional<Failure> parseArgs(int argc, char **argv, Options *options) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool bundleSeen = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "-h" || arg == "--help") {
      options->help = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      // "--flag value" or "--flag=value".
      std::string flag = arg, value;
      bool hasValue = false;
      size_t eq = arg.find('=');
      if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        hasValue = true;
      }
      const char *expects = flag == "--data"           ? "a directory"
                            : flag == "--outputs"      ? "a directory"
                            : flag == "--threads"      ? "a thread count"
                            : flag == "--steps"        ? "a step count"
                            : flag == "--tokens"       ? "a token file"
                            : flag == "--seed"         ? "a seed"
                            : flag == "--metrics"      ? "a file"
                            : flag == "--save"         ? "a directory"
                            : flag == "--save-every"   ? "a step count"
                            : flag == "--resume"       ? "a checkpoint directory"
                            : flag == "--lr"           ? "a learning rate"
                            : flag == "--schedule"     ? "constant or cosine"
                            : flag == "--warmup-steps" ? "a step count"
                            : flag == "--min-lr"       ? "a learning rate"
                            : flag == "--export-onnx"  ? "a file"
                                                       : nullptr;
      if (expects == nullptr)
        return usageError("unknown flag '" + flag + "'");
      if (!hasValue) {
        if (i + 1 >= args.size())
          return usageError(flag + " needs a value (" + expects + ")");
        value = args[++i];
      }
      if (value.empty())
        return usageError(flag + " needs a value (" + expects + "), got an empty string");
      std::optional<std::string> *textSlot = flag == "--data"       ? &options->dataDir
                                              : flag == "--outputs"  ? &options->outputsDir
                                              : flag == "--tokens"   ? &options->tokensFile
                                              : flag == "--metrics"  ? &options->metricsFile
                                              : flag == "--save"     ? &options->saveDir
                                              : flag == "--resume"   ? &options->resumeDir
                                              : flag == "--schedule" ? &options->schedule
                                              : flag == "--export-onnx" ? &options->exportOnnx
                                                                     : nullptr;
      if (textSlot != nullptr) {
        if (*textSlot)
          return usageError(flag + " given more than once");
        if (flag == "--schedule" && value != "constant" && value != "cosine")
          return usageError("--schedule: expected constant or cosine, got '" + value + "'");
        *textSlot = value;
      } else if (flag == "--lr" || flag == "--min-lr") {
        double rate = 0;
        if (!parseRate(value, &rate))
          return usageError(flag + ": expected a non-negative number, got '" + value + "'");
        (flag == "--lr" ? options->lr : options->minLr) = rate;
      } else if (flag == "--seed") {
        uint64_t seed = 0;
        if (!parseUnsigned(value, &seed))
          return usageError("--seed: expected an integer from 0 to 2^64-1, got '" + value + "'");
        options->seed = seed;
      } else if (flag == "--warmup-steps") {
        uint64_t number = 0;
        if (!parseUnsigned(value, &number) || number > 1000000000000ULL)
          return usageError("--warmup-steps: expected a non-negative integer, got '" + value + "'");
        options->warmupSteps = static_cast<long long>(number);
      } else {
        long long number = 0;
        long long max = flag == "--threads" ? 4096 : 1000000000000LL;
        if (!parsePositive(value, max, &number))
          return usageError(flag + ": expected a positive integer, got '" + value + "'");
        if (flag == "--threads")
          options->threads = static_cast<int>(number);
        else if (flag == "--save-every")
          options->saveEvery = number;
        else
          options->steps = number;
      }
      continue;
    }
    if (bundleSeen)
      return usageError("unexpected argument '" + arg + "' (only one BUNDLE can be run)");
    options->bundle = arg;
    bundleSeen = true;
  }
  if (options->help)
    return std::nullopt;
  if (!bundleSeen)
    return usageError("missing BUNDLE (the directory written by shardc)");
  if (options->steps)
    return checkLoopArgs(*options);
  for (const char *flag : kLoopFlags)
    for (const std::string &arg : args)
      if (arg == flag || arg.rfind(std::string(flag) + "=", 0) == 0)
        return usageError(std::string(flag) + " applies to the training loop; give --steps K");
  if (!options->outputsDir)
    return usageError("missing --outputs DIR2");
  return std::nullopt;
}

// Two tensors whose names map to the same file would silently overwrite each other.
std::optional<Failure>
checkDistinctFileNames(const google::protobuf::RepeatedPtrField<shardc::program::Binding> &bindings,
                       const char *kind, const std::string &bundle) {
  std::map<std::string, std::string> owner;
  for (const auto &binding : bindings) {
    std::string file = tensorNpyFileName(binding.name());
    auto [it, inserted] = owner.emplace(file, binding.name());
    if (!inserted)
      return error(bundle + ": graph " + kind + "s " + quoteForMessage(it->second) + " and " +
                   quoteForMessage(binding.name()) + " both map to the file name '" + file + "'");
  }
  return std::nullopt;
}

std::optional<Failure> readInputs(const Executor &executor, const std::string &dataDir,
                                  std::map<std::string, HostTensor> *inputs) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dataDir, ec))
    return error(dataDir + ": " +
                 (std::filesystem::exists(dataDir, ec) ? "not a directory" : "no such directory") +
                 " (given to --data)");
  for (const auto &binding : executor.program().inputs()) {
    std::string file = tensorNpyFileName(binding.name());
    std::string path = joinPath(dataDir, file);
    if (!pathExists(path))
      return error(dataDir + ": no '" + file + "' for graph input " +
                   quoteForMessage(binding.name()));
    HostTensor tensor;
    Status status = readNpy(path, &tensor);
    if (!status.isOk())
      return error(status.message());
    status = executor.checkInput(binding.name(), tensor);
    if (!status.isOk())
      return error(path + ": " + status.message());
    (*inputs)[binding.name()] = std::move(tensor);
  }
  return std::nullopt;
}

std::optional<Failure> writeOutputs(const Executor &executor, const std::string &outputsDir,
                                    const std::map<std::string, HostTensor> &outputs) {
  std::error_code ec;
  std::filesystem::create_directories(outputsDir, ec);
  if (ec)
    return error(outputsDir + ": cannot create the output directory: " + ec.message());
  if (!std::filesystem::is_directory(outputsDir, ec))
    return error(outputsDir + ": not a directory");
  for (const auto &binding : executor.program().outputs()) {
    std::string path = joinPath(outputsDir, tensorNpyFileName(binding.name()));
    Status status = writeNpy(path, outputs.at(binding.name()));
    if (!status.isOk())
      return error(status.message());
  }
  return std::nullopt;
}

// Writes each trained parameter to DIR2/<name>.npy.
std::optional<Failure> writeParams(const TrainingLoop &loop, const std::string &outputsDir) {
  std::error_code ec;
  std::filesystem::create_directories(outputsDir, ec);
  if (ec)
    return error(outputsDir + ": cannot create the output directory: " + ec.message());
  for (const std::string &name : loop.signature().params) {
    Status status = writeNpy(joinPath(outputsDir, tensorNpyFileName(name)), *loop.value(name));
    if (!status.isOk())
      return error(status.message());
  }
  return std::nullopt;
}

std::optional<Failure> saveLoopCheckpoint(const TrainingLoop &loop, const std::string &dir,
                                          uint64_t seed) {
  CheckpointContents contents;
  loop.snapshot(&contents);
  contents.rngSeed = seed;
  // Batches are a pure function of the step, so the data source resumes at the step count.
  contents.dataPosition = contents.step;
  Status status = saveCheckpoint(dir, contents);
  if (!status.isOk())
    return error(status.message());
  return std::nullopt;
}

// Prints the planned and measured peak memory of the run (plus `details`); a measured peak that
// differs from the plan is an error.
std::optional<Failure> reportPeakMemory(const shardc::program::Program &program,
                                        const MemoryTracker &tracker, const std::string &details) {
  PeakMemoryReport report = comparePeakMemory(program, tracker);
  if (report.planned && !report.agrees)
    return error(report.text + " (a bug: please report it)");
  std::fprintf(stderr, "shardrun: %s%s\n", report.text.c_str(), details.c_str());
  return std::nullopt;
}

// The training loop: --steps K from the bundle's initial parameters or a checkpoint.
std::optional<Failure> runTrainingLoop(const Options &options, const LoadedBundle &bundle,
                                       Executor *executor) {
  const std::string &bundleDir = options.bundle;
  std::unique_ptr<TrainingLoop> loop;
  Status status = TrainingLoop::create(executor, bundle.weights.get(), &loop);
  if (!status.isOk())
    return error(bundleDir + ": " + status.message());
  const TrainingSignature &signature = loop->signature();

  // Checked before the first step: a bundle that cannot export, or a destination that cannot
  // be written, must not be discovered after the whole run.
  std::unique_ptr<OnnxExporter> exporter;
  if (options.exportOnnx) {
    status = OnnxExporter::checkDestination(*options.exportOnnx);
    if (!status.isOk())
      return error("--export-onnx: " + status.message());
    status = OnnxExporter::open(bundle, &exporter);
    if (!status.isOk())
      return error("--export-onnx: " + status.message());
  }

  uint64_t seed = options.seed.value_or(0);
  if (options.resumeDir) {
    CheckpointContents checkpoint;
    status = loadCheckpoint(*options.resumeDir, &checkpoint);
    if (!status.isOk())
      return error(status.message());
    if (options.seed && *options.seed != checkpoint.rngSeed)
      return error(*options.resumeDir + ": the checkpoint was written with --seed " +
                   std::to_string(checkpoint.rngSeed) + ", not " + std::to_string(*options.seed) +
                   " (a resumed run must draw the same batches)");
    if (checkpoint.dataPosition != checkpoint.step)
      return error(*options.resumeDir + ": data position " +
                   std::to_string(checkpoint.dataPosition) + " does not match step " +
                   std::to_string(checkpoint.step) + " (not written by shardrun's training loop)");
    if (checkpoint.step > *options.steps)
      return error(*options.resumeDir + ": the checkpoint is at step " +
                   std::to_string(checkpoint.step) + ", beyond --steps " +
                   std::to_string(*options.steps));
    status = loop->restore(checkpoint);
    if (!status.isOk())
      return error(*options.resumeDir + ": " + status.message());
    seed = checkpoint.rngSeed;
  }
  loop->setSeed(seed);

  std::unique_ptr<BatchSource> batches;
  if (options.tokensFile) {
    status = openTokenBatchSource(*options.tokensFile, signature.batchInputs, seed, &batches);
  } else if (options.dataDir) {
    status = openNpyBatchSource(*options.dataDir, signature.batchInputs, &batches);
  } else if (!signature.batchInputs.empty()) {
    return usageError("missing --data DIR or --tokens FILE.bin (the training step has " +
                      std::to_string(signature.batchInputs.size()) + " batch input" +
                      (signature.batchInputs.size() == 1 ? "" : "s") + ")");
  } else {
    status = openNpyBatchSource("", signature.batchInputs, &batches); // no batch inputs
  }
  if (!status.isOk())
    return error(status.message());

  LrSchedule schedule;
  if (options.schedule) {
    status = parseLrScheduleKind(*options.schedule, &schedule.kind);
    if (!status.isOk())
      return usageError("--schedule: " + status.message());
  }
  schedule.lr = options.lr.value_or(1e-3);
  schedule.minLr = options.minLr.value_or(0.0);
  schedule.warmupSteps = options.warmupSteps.value_or(0);
  schedule.totalSteps = *options.steps;

  MetricsLog metrics;
  if (options.metricsFile) {
    status = metrics.open(*options.metricsFile);
    if (!status.isOk())
      return error(status.message());
  }

  const int64_t firstStep = loop->step();
  const int64_t totalSteps = *options.steps;
  ProgressLine progress(stderr, isatty(fileno(stderr)) != 0, firstStep, totalSteps,
                        batches->itemsPerStep(), batches->itemName());
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  float loss = NAN;
  int64_t lastSaved = -1;
  uint64_t allocationsAfterFirstStep = 0;
  while (loop->step() < totalSteps) {
    int64_t step = loop->step() + 1;
    float lr = static_cast<float>(schedule.at(step));
    Clock::time_point stepStart = Clock::now();
    status = loop->runStep(batches.get(), lr, &loss);
    double stepMs = std::chrono::duration<double, std::milli>(Clock::now() - stepStart).count();
    if (!status.isOk()) {
      progress.finish();
      return error(bundleDir + ": " + status.message());
    }
    if (step == firstStep + 1)
      allocationsAfterFirstStep = executor->memoryTracker()->allocationCount();
    if (options.metricsFile) {
      status = metrics.write(step, loss, lr, stepMs);
      if (!status.isOk()) {
        progress.finish();
        return error(status.message());
      }
    }
    progress.update(step, loss, lr, std::chrono::duration<double>(Clock::now() - start).count());
    if (options.saveDir && options.saveEvery && step % *options.saveEvery == 0) {
      if (auto failure = saveLoopCheckpoint(*loop, *options.saveDir, seed)) {
        progress.finish();
        return failure;
      }
      lastSaved = step;
    }
  }
  progress.finish();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  status = metrics.close();
  if (!status.isOk())
    return error(status.message());
  if (options.saveDir && lastSaved != loop->step())
    if (auto failure = saveLoopCheckpoint(*loop, *options.saveDir, seed))
      return failure;
  if (options.outputsDir)
    if (auto failure = writeParams(*loop, *options.outputsDir))
      return failure;
  OnnxExportResult exported;
  if (exporter) {
    status = exporter->write(
        *options.exportOnnx, [&](const std::string &name) { return loop->value(name); },
        OnnxExportOptions(), &exported);
    if (!status.isOk())
      return error("--export-onnx: " + status.message());
  }

  int64_t ran = loop->step() - firstStep;
  std::string summary = "shardrun: trained " + std::to_string(ran) + " step" +
                        (ran == 1 ? "" : "s");
  char text[160];
  if (ran > 0) {
    std::snprintf(text, sizeof text, " (%lld..%lld) in %.2f s, %.1f ms/step, final loss %.9g",
                  static_cast<long long>(firstStep + 1), static_cast<long long>(loop->step()),
                  seconds, seconds * 1000.0 / static_cast<double>(ran), static_cast<double>(loss));
    summary += text;
  }
  if (options.saveDir)
    summary += "; checkpoint at step " + std::to_string(loop->step()) + " in " + *options.saveDir;
  if (options.outputsDir)
    summary += "; wrote " + std::to_string(signature.params.size()) + " parameters to " +
               *options.outputsDir;
  if (exporter)
    summary += "; exported the trained model to " + *options.exportOnnx +
               (exported.externalData.empty() ? ""
                                              : " (parameters in " + exported.externalData + ")");
  std::fprintf(stderr, "%s\n", summary.c_str());

  // Steps after the first reuse every tensor: none of them may allocate.
  std::string memoryDetails;
  if (ran > 1) {
    const uint64_t later = executor->memoryTracker()->allocationCount() - allocationsAfterFirstStep;
    memoryDetails += "; " + std::to_string(later) + " allocations after the first step";
  }
  memoryDetails += "; the data source holds " + std::to_string(batches->heldBytes()) +
                   " more bytes (the whole data set, not part of the plan)";
  return reportPeakMemory(executor->program(), *executor->memoryTracker(), memoryDetails);
}

std::optional<Failure> runShardrun(const Options &options) {
  const std::string &bundleDir = options.bundle;
  // Counts what the run holds for the program (runtime/memory): declared first, so that it
  // outlives every allocation it counts.
  MemoryTracker tracker;
  LoadedBundle bundle;
  Status status = readBundleProgram(bundleDir, &bundle);
  if (!status.isOk())
    return error(status.message());

  // A training bundle without --steps runs one step on explicit state: every input (the batch,
  // trained parameters, optimizer state, "step", "lr") comes from --data and every updated value
  // is written to --outputs under the same name. With --steps it runs the training loop.
  const bool trainingLoop = bundle.bundle.mode() == "train" && options.steps.has_value();
  if (bundle.bundle.mode() != "train" && options.steps)
    return usageError("--steps applies to training bundles; " + bundleDir + " is a forward bundle");

  {
    MemoryScope scope(&tracker, MemoryUse::Weights);
    status = validateBundleAndLoadWeights(&bundle);
  }
  if (!status.isOk())
    return error(status.message());
  if (bundle.bundle.world_size() != 1)
    return error(bundleDir + ": compiled for " + std::to_string(bundle.bundle.world_size()) +
                 " ranks; running more than one rank is not implemented yet");

  const shardc::program::Program &program = bundle.bundle.programs(0);
  if (auto failure = checkDistinctFileNames(program.inputs(), "input", bundleDir))
    return failure;
  if (auto failure = checkDistinctFileNames(program.outputs(), "output", bundleDir))
    return failure;
  if (!trainingLoop && !options.dataDir && program.inputs_size() > 0)
    return usageError("missing --data DIR (the bundle has " +
                      std::to_string(program.inputs_size()) + " graph input" +
                      (program.inputs_size() == 1 ? "" : "s") + ")");

  if (options.threads)
    shardc::runtime::setCpuKernelThreads(*options.threads);
  std::unique_ptr<Executor> executor;
  status = Executor::create(program, bundle.weights, &executor, &tracker);
  if (!status.isOk())
    return error(bundleDir + ": " + status.message());
  if (trainingLoop)
    return runTrainingLoop(options, bundle, executor.get());

  std::map<std::string, HostTensor> inputs;
  if (options.dataDir) {
    MemoryScope scope(&tracker, MemoryUse::StepInputs);
    if (auto failure = readInputs(*executor, *options.dataDir, &inputs))
      return failure;
  }

  std::map<std::string, HostTensor> outputs;
  auto start = std::chrono::steady_clock::now();
  status = executor->run(inputs, &outputs);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status.isOk())
    return error(bundleDir + ": " + status.message());

  if (auto failure = writeOutputs(*executor, *options.outputsDir, outputs))
    return failure;
  std::fprintf(stderr, "shardrun: ran %d ops in %.1f ms, wrote %zu output%s to %s\n",
               program.ops_size(), ms, outputs.size(), outputs.size() == 1 ? "" : "s",
               options.outputsDir->c_str());
  return reportPeakMemory(program, tracker, "");
}

int report(const Failure &failure) {
  // Always one line; usage errors carry the hint on the same line.
  std::fprintf(stderr, "shardrun: error: %s%s\n", failure.message.c_str(),
               failure.exitCode == kExitUsage ? " (see 'shardrun --help')" : "");
  return failure.exitCode;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options options;
    if (auto failure = parseArgs(argc, argv, &options))
      return report(*failure);
    if (options.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (auto failure = runShardrun(options))
      return report(*failure);
    return 0;
  } catch (const std::exception &e) {
    return report(error(std::string("internal error: ") + e.what()));
  } catch (...) {
    return report(error("internal error: unknown exception"));
  }
}
