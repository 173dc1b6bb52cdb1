// How the ranks of a run talk to each other: the backend (--comm, or what launched us) and its
// options (--comm-timeout, --io-timeout).
#pragma once

#include "runtime/comm/communicator.h"
#include "tools/shardrun/options.h"

#include <optional>
#include <string>

namespace shardrun {

enum class CommBackend { Local, Mpi, Nccl };

// --comm, else mpi when an MPI launcher (mpirun, srun) started this process, else local.
// Errors: --comm local under an MPI launcher (every process would run every rank), and a
// backend this shardrun was built without.
std::optional<Failure> chooseCommBackend(const Options &options, CommBackend *out);

shardc::runtime::CommOptions commOptionsOf(const Options &options);

// --io-timeout, or its default: how long the ranks wait through long work on one of them
// (setup, a checkpoint written by rank 0). Long enough for a large bundle or checkpoint on a
// slow file system; a rank that fails instead of stalling ends the run at once anyway.
constexpr double kDefaultIoTimeoutSeconds = 600;
double ioTimeoutOf(const Options &options);

// The error for a bundle compiled for `bundleWorld` ranks started as `mpiWorld` MPI processes.
std::string mpiWorldMismatch(const std::string &bundle, int bundleWorld, int mpiWorld);

} // namespace shardrun
