#include "tools/shardrun/local_run.h"

#include "runtime/comm/local/local_comm.h"
#include "runtime/loader/bundle.h"
#include "runtime/support/memory_tracker.h"
#include "runtime/training/rank_threads.h"
#include "tools/shardrun/bundle_setup.h"
#include "tools/shardrun/comm_options.h"
#include "tools/shardrun/rank_training.h"
#include "tools/shardrun/run_report.h"
#include "tools/shardrun/single_run.h"
#include "tools/shardrun/training_setup.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace shardrun {

using namespace shardc::runtime;

namespace {

std::optional<Failure> runLocalWorld(const Options &options, const LoadedBundle &bundle,
                                     TrainingRun &run) {
  const int world = bundle.bundle.world_size();
  std::vector<std::unique_ptr<Communicator>> comms;
  Status status = createLocalWorld(world, commOptionsOf(options), &comms);
  if (!status.isOk())
    return error(status.message());
  std::vector<Communicator *> commPointers;
  for (const auto &comm : comms)
    commPointers.push_back(comm.get());

  // Each rank measures its own memory. The weights are loaded once and shared; each rank counts
  // them, as it would when it ran in its own process (the plan is per rank).
  std::unique_ptr<MemoryTracker[]> trackers(new MemoryTracker[world]);
  for (int r = 0; r < world; ++r)
    trackers[r].allocated(MemoryUse::Weights, bundle.weights->allocatedBytes());
  std::vector<RankOutcome> outcomes(static_cast<size_t>(world));
  status = runRankThreads(commPointers, [&](int rank) {
    return runTrainingRank(run, rank, commPointers[rank], &trackers[rank], Status::ok(),
                           &outcomes[rank]);
  });
  if (!status.isOk())
    return error(status.message()); // "rank R: cause"

  std::fprintf(stderr, "%s\n", outcomes[0].summary.c_str());
  if (outcomes[0].stopSignal != 0)
    return Failure{"", kExitSignalBase + outcomes[0].stopSignal};
  std::vector<RankReport> reports;
  for (const RankOutcome &outcome : outcomes)
    reports.push_back(outcome.report);
  return printRankReports(reports, world);
}

} // namespace

std::optional<Failure> runInProcess(const Options &options, int expectedWorldSize) {
  // Counts what a single-rank run holds for the program (runtime/memory): declared first, so
  // that it outlives every allocation it counts. Several ranks have a tracker each.
  MemoryTracker tracker;
  LoadedBundle bundle;
  bool trainingLoop = false;
  if (auto failure = readRunBundle(options, &bundle, &trainingLoop))
    return failure;
  const int world = bundle.bundle.world_size();
  if (expectedWorldSize != 0 && world != expectedWorldSize)
    return error(mpiWorldMismatch(options.bundle, world, expectedWorldSize));
  // The ranks of a run without mpirun are threads of this process, each with its program, its
  // tracker and its communicator, whose channels grow with the square of their number: beyond
  // this many a job takes hosts (mpirun), not threads. Checked before the weights are loaded.
  constexpr int kMaxLocalRanks = 1024;
  if (world > kMaxLocalRanks)
    return error(options.bundle + ": compiled for " + std::to_string(world) +
                 " ranks; without mpirun shardrun runs at most " + std::to_string(kMaxLocalRanks) +
                 " ranks as threads of one process (launch it with mpirun -np " +
                 std::to_string(world) + ")");
  // The weights count in `tracker` for a single rank, by hand in each rank's tracker for several.
  if (auto failure = loadRunBundle(options, trainingLoop, world == 1 ? &tracker : nullptr, &bundle))
    return failure;

  if (auto failure = setCpuKernelOptions(options, world))
    return failure;
  if (!trainingLoop)
    return runOnce(options, bundle, &tracker);
  TrainingRun run;
  if (auto failure = prepareTraining(options, bundle, /*hostsRank0=*/true, &run))
    return failure;
  if (world > 1)
    return runLocalWorld(options, bundle, run);

  RankOutcome outcome;
  Status status = runTrainingRank(run, 0, nullptr, &tracker, Status::ok(), &outcome);
  if (!status.isOk())
    return error(status.message());
  std::fprintf(stderr, "%s\n", outcome.summary.c_str());
  if (outcome.stopSignal != 0)
    return Failure{"", kExitSignalBase + outcome.stopSignal};
  return printRankReports({outcome.report}, 1);
}

} // namespace shardrun
