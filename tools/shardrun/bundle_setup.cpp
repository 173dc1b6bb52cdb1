#include "tools/shardrun/bundle_setup.h"

#include "runtime/kernels/kernel.h"
#include "runtime/loader/rank_program.h"
#include "tools/shardrun/tensor_files.h"

#include <string>

namespace shardrun {

using namespace shardc::runtime;

std::optional<Failure> readRunBundle(const Options &options, LoadedBundle *bundle,
                                     bool *trainingLoop) {
  const std::string &bundleDir = options.bundle;
  Status status = readBundleProgram(bundleDir, bundle);
  if (!status.isOk())
    return error(status.message());

  // A training bundle without --steps runs one step on explicit state: every input (the batch,
  // trained parameters, optimizer state, "step", "lr") comes from --data and every updated value
  // is written to --outputs under the same name. With --steps it runs the training loop.
  *trainingLoop = bundle->bundle.mode() == "train" && options.steps.has_value();
  if (bundle->bundle.mode() != "train" && options.steps)
    return usageError("--steps applies to training bundles; " + bundleDir + " is a forward bundle");
  return std::nullopt;
}

std::optional<Failure> loadRunBundle(const Options &options, bool trainingLoop,
                                     MemoryTracker *weightsTracker, LoadedBundle *bundle) {
  const std::string &bundleDir = options.bundle;
  Status status;
  {
    MemoryScope scope(weightsTracker, MemoryUse::Weights);
    status = validateBundleAndLoadWeights(bundle);
  }
  if (!status.isOk())
    return error(status.message());
  const int world = bundle->bundle.world_size();
  // The ranks of a forward run or a single step would each hold a part of the inputs and
  // outputs, which the .npy files of --data and --outputs do not describe yet.
  if (world > 1 && !trainingLoop)
    return error(bundleDir + ": compiled for " + std::to_string(world) +
                 " ranks; a bundle of several ranks runs the training loop only (give --steps K)");

  // Every rank's program has the graph's inputs and outputs under the same names.
  const shardc::program::Program &program =
      bundle->bundle.programs(programIndexOfRank(bundle->bundle, 0));
  if (auto failure = checkDistinctFileNames(program.inputs(), "input", bundleDir))
    return failure;
  if (auto failure = checkDistinctFileNames(program.outputs(), "output", bundleDir))
    return failure;
  return std::nullopt;
}

std::optional<Failure> setCpuKernelOptions(const Options &options, int ranksInProcess) {
  if (options.threads)
    setCpuKernelThreads(*options.threads);
  else if (ranksInProcess > 1)
    // The ranks already keep the cores busy, one thread each; BLAS threads on top would
    // oversubscribe them (ranks x cores threads) and slow every rank down.
    setCpuKernelThreads(1);
  const std::string products = options.bf16Products.value_or("auto");
  const bool native =
      products == "native" || (products == "auto" && shardc::runtime::cpuHasNativeBf16Products());
  Status status = shardc::runtime::setCpuBf16Products(native ? shardc::runtime::Bf16Products::Native
                                                             : shardc::runtime::Bf16Products::Exact);
  if (!status.isOk())
    return usageError("--bf16-products native: " + status.message());
  return std::nullopt;
}

} // namespace shardrun
