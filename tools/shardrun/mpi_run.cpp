#include "tools/shardrun/mpi_run.h"

#include "tools/shardrun/local_run.h"

#ifdef SHARDC_HAVE_MPI
#include "runtime/comm/mpi/mpi_comm.h"
#ifdef SHARDC_HAVE_NCCL
#include "runtime/comm/nccl/nccl_comm.h"
#endif
#include "runtime/common/mesh.h"
#include "runtime/loader/bundle.h"
#include "runtime/support/memory_tracker.h"
#include "tools/shardrun/bundle_setup.h"
#include "tools/shardrun/comm_options.h"
#include "tools/shardrun/rank_training.h"
#include "tools/shardrun/run_report.h"
#include "tools/shardrun/training_setup.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>
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
  if (auto failure = setCpuKernelOptions(options, 1))
    return failure;
  return prepareTraining(options, *bundle, /*hostsRank0=*/rank == 0, run);
}

void printRankError(int rank, const Failure &failure) {
  std::fprintf(stderr, "shardrun: error: rank %d: %s%s\n", rank, failure.message.c_str(),
               failure.exitCode == kExitUsage ? " (see 'shardrun --help')" : "");
}

} // namespace

namespace {

// Whether every rank runs its own mesh rank (false when any does not: the world is then
// renumbered), by an all-reduce of the ranks that differ; an error in *status.
bool agreeOnIdentityOrder(Communicator &comm, bool mine, Status *status) {
  float differing = mine ? 0.0f : 1.0f;
  *status = comm.allReduceSum(&differing, 1);
  return status->isOk() && differing == 0.0f;
}

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
  // mpirun puts consecutive ranks on one node: this process runs the mesh rank that keeps each
  // tensor-parallel group on consecutive ranks (runtime/common/mesh.h), as the cost model
  // places them; a world renumbered so, when that differs from the mesh's own numbering (tp
  // beside pp). Every process takes part in the split, a failed setup with its own rank.
  int meshRank = rank;
  if (!setup && bundle.bundle.programs_size() > 0) {
    std::vector<int64_t> sizes;
    int tpAxis = -1;
    for (const auto &axis : bundle.bundle.programs(0).mesh_axes()) {
      if (axis.name() == "tp")
        tpAxis = static_cast<int>(sizes.size());
      sizes.push_back(axis.size());
    }
    int64_t product = 1;
    for (int64_t s : sizes)
      product *= s;
    if (product == size)
      meshRank = static_cast<int>(meshRankOfLaunchRank(sizes, tpAxis, rank));
  }
  std::unique_ptr<Communicator> placed;
  Communicator *world = comm.get();
  int worldRank = rank;
  if (!agreeOnIdentityOrder(*comm, meshRank == rank, &status)) {
    if (status.isOk()) {
      status = comm->split(0, meshRank, &placed);
      if (status.isOk() && placed) {
        placed->setGroupName("mesh");
        world = placed.get();
        worldRank = placed->rank();
        if (rank == 0 && size <= 64) {
          std::string order;
          for (int r = 0; r < size; ++r)
            order += (r ? " " : "") + std::to_string(placed->worldRankOf(r));
          std::fprintf(stderr,
                       "shardrun: each tp group on consecutive ranks: mesh ranks 0..%d run on "
                       "MPI ranks %s\n",
                       size - 1, order.c_str());
        }
      }
    }
  }
  if (!status.isOk() && !setup)
    setup = Failure{status.message(), kExitError};
  RankOutcome outcome;
  status = runTrainingRank(run, worldRank, world, &tracker,
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
