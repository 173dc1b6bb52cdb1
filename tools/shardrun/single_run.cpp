#include "tools/shardrun/single_run.h"

#include "runtime/executor/executor.h"
#include "runtime/loader/program_validation.h"
#include "runtime/loader/rank_program.h"
#include "runtime/memory/memory_report.h"
#include "runtime/support/file_io.h"
#include "tools/shardrun/device_option.h"
#include "tools/shardrun/run_report.h"
#include "tools/shardrun/tensor_files.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

namespace shardrun {

using namespace shardc::runtime;

std::optional<Failure> runOnce(const Options &options, const LoadedBundle &bundle,
                               MemoryTracker *tracker) {
  const std::string &bundleDir = options.bundle;
  shardc::program::Program program;
  Status programStatus = programOfRank(bundle.bundle, 0, &program);
  if (!programStatus.isOk())
    return error(bundleDir + "/program.pb: " + programStatus.message());
  if (!options.dataDir && program.inputs_size() > 0)
    return usageError("missing --data DIR (the bundle has " +
                      std::to_string(program.inputs_size()) + " graph input" +
                      (program.inputs_size() == 1 ? "" : "s") + ")");
  // Everything is checked before the arena and the workspace are allocated: the program, the
  // output directory, every input file.
  Status status = validateProgram(program);
  if (!status.isOk())
    return error(bundleDir + "/program.pb: " + status.message());
  status = prepareOutputDirectory(*options.outputsDir);
  if (!status.isOk())
    return error("--outputs " + status.message());
  std::map<std::string, HostTensor> inputs, inPlaceState;
  if (options.dataDir) {
    MemoryScope scope(tracker, MemoryUse::StepInputs);
    if (auto failure = readInputs(program, *options.dataDir, &inputs, &inPlaceState))
      return failure;
  }
  std::unique_ptr<Device> device;
  status = createRankDevice(options, &device);
  if (!status.isOk())
    return error(status.message());
  std::unique_ptr<Executor> executor;
  status = Executor::create(program, bundle.weights, &executor, tracker, nullptr, device.get());
  if (!status.isOk())
    return error(bundleDir + ": " + status.message());
  for (const auto &[name, tensor] : inPlaceState) {
    status = executor->setState(name, tensor);
    if (!status.isOk())
      return error(bundleDir + ": " + status.message());
  }
  inPlaceState.clear();

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
  RankReport report;
  report.memory = memoryReportOf(*executor, *tracker);
  return printRankReports({report}, 1);
}

} // namespace shardrun
