#include "tools/shardrun/mpi_run.h"

#include "tools/shardrun/local_run.h"

#ifdef SHARDC_HAVE_MPI
#include "runtime/comm/mpi/mpi_comm.h"
#ifdef SHARDC_HAVE_NCCL
#include "runtime/comm/nccl/nccl_comm.h"
#endif
#include "runtime/loader/bundle.h"
#include "runtime/support/memory_tracker.h"
#include "tools/shardrun/bundle_setup.h"
#include "tools/shardrun/comm_options.h"
#include "tools/shardrun/rank_training.h"
#include "tools/shardrun/run_report.h"
#include "tools/shardrun/training_setup.h"

#include <cstdio>
#include <memory>
#endif

namespace shardrun {

#ifndef SHARDC_HAVE_MPI

std::optional<Failure> runUnderMpi(const Options &, CommBackend) {
  // chooseCommBackend never picks mpi in a build without it.
  return error("this shardrun was built without MPI");
}

#else

using namespace shardc::runtime;

namespace {

// Everything the process prepares before its rank's own setup.
std::optional<Failure> setUpProcess(const Options &options, int rank, int size,
                                    MemoryTracker *tracker, LoadedBundle *bundle,
                                    TrainingRun *run) {
  // Set first: a rank whose setup fails still reads its --io-timeout in runTrainingRank.
  run->options = &options;
  bool trainingLoop = false;
  if (auto failure = readRunBundle(options, bundle, &trainingLoop))
    return failure;
  if (bundle->bundle.world_size() != size)
    return error(mpiWorldMismatch(options.bundle, bundle->bundle.world_size(), size));
  if (auto failure = loadRunBundle(options, trainingLoop, tracker, bundle))
    return failure;
  setKernelThreads(options, 1);
  return prepareTraining(options, *bundle, /*hostsRank0=*/rank == 0, run);
}

void printRankError(int rank, const Failure &failure) {
  std::fprintf(stderr, "shardrun: error: rank %d: %s%s\n", rank, failure.message.c_str(),
               failure.exitCode == kExitUsage ? " (see 'shardrun --help')" : "");
}

} // namespace

namespace {

// The process's communicator: MPI's, or NCCL's on this rank's GPU (chosen by local rank).
Status createCommunicator(const Options &options, CommBackend backend,
                          std::unique_ptr<Communicator> *comm) {
#ifdef SHARDC_HAVE_NCCL
  if (backend == CommBackend::Nccl)
    return createNcclCommunicator(commOptionsOf(options), /*device=*/-1, comm);
#endif
  (void)backend; // chooseCommBackend picks nccl only in a build that has it
  return createMpiCommunicator(commOptionsOf(options), comm);
}

} // namespace

std::optional<Failure> runUnderMpi(const Options &options, CommBackend backend) {
  std::unique_ptr<Communicator> comm;
  Status status = createCommunicator(options, backend, &comm);
  if (!status.isOk())
    return error(std::string("--comm ") + (backend == CommBackend::Nccl ? "nccl" : "mpi") + ": " +
                 status.message());
  const int rank = comm->rank(), size = comm->size();
  // A job of one process is a single-rank run, with nothing to communicate.
  if (size == 1)
    return runInProcess(options, /*expectedWorldSize=*/1);

  // Declared before what it counts (the weights, the rank's executor), so that it outlives them.
  MemoryTracker tracker;
  LoadedBundle bundle;
  TrainingRun run;
  std::optional<Failure> setup = setUpProcess(options, rank, size, &tracker, &bundle, &run);
  RankOutcome outcome;
  status = runTrainingRank(run, rank, comm.get(), &tracker,
                           setup ? Status::error(setup->message) : Status::ok(), &outcome);
  if (!status.isOk()) {
    const Failure failure{status.message(), setup && setup->message == status.message()
                                                ? setup->exitCode
                                                : kExitError};
    printRankError(rank, failure);
    // After setup the other ranks are inside the steps, waiting for this one: end the job.
    // (A setup failure needs no abort: every rank learned of it and stops by itself.)
    if (outcome.setupDone)
      comm->abort(failure.message);
    return Failure{"", failure.exitCode};
  }
  if (outcome.stoppedForOtherRank)
    return Failure{"", kExitError};
  if (rank == 0)
    std::fprintf(stderr, "%s\n", outcome.summary.c_str());
  if (outcome.stopSignal != 0)
    return Failure{"", kExitSignalBase + outcome.stopSignal};
  return printRankReports({outcome.report}, size);
}

#endif

} // namespace shardrun
