// shardrun: executes a compiled shardc bundle.
//
//   shardrun BUNDLE --data DIR --outputs DIR2 [--threads N]
//
// Reads each graph input from DIR/<name>.npy, runs the program, writes each graph output to
// DIR2/<name>.npy (names mapped to file names by tensorNpyFileName). Errors are one line,
// "shardrun: error: ...", exit 1; usage errors exit 2.
#include "runtime/data/npy.h"
#include "runtime/data/tensor_file_name.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/program/bundle.h"
#include "runtime/support/file_io.h"
#include "runtime/support/quote.h"
#include "runtime/support/status.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace shardc::runtime;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: shardrun BUNDLE --data DIR --outputs DIR2 [--threads N]\n"
    "\n"
    "Runs a bundle compiled by shardc on inputs stored as NumPy .npy files.\n"
    "\n"
    "  BUNDLE          the bundle directory written by shardc (holds program.pb)\n"
    "  --data DIR      directory with one .npy file per graph input\n"
    "  --outputs DIR2  directory to write one .npy file per graph output (created if needed)\n"
    "  --threads N     threads for the CPU kernels' matrix products (default: OpenBLAS's own\n"
    "                  choice, usually one per core)\n"
    "  --steps N       training steps (the training loop is not implemented yet; a training\n"
    "                  bundle without --steps runs one step, reading every input of the step,\n"
    "                  parameters and optimizer state included, from DIR)\n"
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
  bool help = false;
};

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
      const char *expects = flag == "--data"      ? "a directory"
                            : flag == "--outputs" ? "a directory"
                            : flag == "--threads" ? "a thread count"
                            : flag == "--steps"   ? "a step count"
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
      if (flag == "--data" || flag == "--outputs") {
        std::optional<std::string> &slot =
            flag == "--data" ? options->dataDir : options->outputsDir;
        if (slot)
          return usageError(flag + " given more than once");
        slot = value;
      } else {
        long long number = 0;
        long long max = flag == "--threads" ? 4096 : 1000000000000LL;
        if (!parsePositive(value, max, &number))
          return usageError(flag + ": expected a positive integer, got '" + value + "'");
        if (flag == "--threads")
          options->threads = static_cast<int>(number);
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

std::optional<Failure> runShardrun(const Options &options) {
  const std::string &bundleDir = options.bundle;
  LoadedBundle bundle;
  Status status = readBundleProgram(bundleDir, &bundle);
  if (!status.isOk())
    return error(status.message());

  // A training bundle runs one step on explicit state: every input (the batch, trained
  // parameters, optimizer state, "step", "lr") comes from --data and every updated value is
  // written to --outputs under the same name. The training loop itself is not built yet.
  if (bundle.bundle.mode() == "train" && options.steps)
    return error(bundleDir + ": the training loop (--steps) is not implemented yet; run one "
                             "step at a time by giving every input of the step in --data");
  if (bundle.bundle.mode() != "train" && options.steps)
    return usageError("--steps applies to training bundles; " + bundleDir + " is a forward bundle");

  status = validateBundleAndLoadWeights(&bundle);
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
  if (!options.dataDir && program.inputs_size() > 0)
    return usageError("missing --data DIR (the bundle has " +
                      std::to_string(program.inputs_size()) + " graph input" +
                      (program.inputs_size() == 1 ? "" : "s") + ")");

  if (options.threads)
    shardc::runtime::setCpuKernelThreads(*options.threads);
  std::unique_ptr<Executor> executor;
  status = Executor::create(program, bundle.weights, &executor);
  if (!status.isOk())
    return error(bundleDir + ": " + status.message());

  std::map<std::string, HostTensor> inputs;
  if (options.dataDir)
    if (auto failure = readInputs(*executor, *options.dataDir, &inputs))
      return failure;

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
  return std::nullopt;
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
