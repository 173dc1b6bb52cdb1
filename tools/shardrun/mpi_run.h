// Running one rank of a bundle per process, under mpirun or srun (backend "mpi", or "nccl",
// which bootstraps through MPI): this process runs programs[its MPI rank]; the MPI job must
// have exactly the bundle's world size.
//
// Setup failures go through the ranks' agreement (runtime/training/setup_agreement.h): the
// lowest failing rank prints its error and every process exits 1. A failure during the steps is
// printed by the failing rank ("shardrun: error: rank R: cause"), whose abort then ends the job.
#pragma once

#include "tools/shardrun/comm_options.h"
#include "tools/shardrun/options.h"

#include <optional>

namespace shardrun {

// A Failure with an empty message: the process exits with its code, the error having been
// printed already (by this process or another rank's).
// `backend` is Mpi or Nccl.
std::optional<Failure> runUnderMpi(const Options &options, CommBackend backend);

} // namespace shardrun
