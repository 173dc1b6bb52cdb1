// Backend "nccl": one process per GPU under an MPI launcher; NCCL does the collectives on a
// stream of its own. Built only when CMake finds CUDA, NCCL and MPI: targets that link
// shardc_comm_nccl see SHARDC_HAVE_NCCL defined, and only they may include this header.
//
// The runtime's buffers are host memory today, so every collective copies its data to a device
// buffer, runs ncclAllReduce / ncclReduceScatter / ncclAllGather, and copies the result back.
// Waits poll the stream and NCCL's asynchronous error against the deadline; on a timeout the
// NCCL communicator is aborted (ncclCommAbort) so that the kernels stop. NCCL chooses its own
// reduction order, so results are not bit-identical with the local and mpi backends (they are
// run to run on the same machine and NCCL version). The counters use comm_cost.h's formula.
//
// split() splits the MPI communicator first (its exchange has the deadline and names a rank
// that never arrives), then the NCCL one with ncclCommSplit (NCCL 2.18 and later) or, with an
// older NCCL, creates the group's with ncclCommInitRank from its rank 0's ncclUniqueId,
// broadcast over the group's MPI communicator.
//
// The development machine has no GPU: this backend is compiled and linked there, but it only
// runs where a GPU is.
#pragma once

#include "runtime/comm/communicator.h"

#include <memory>

namespace shardc::runtime {

// Initialises MPI through createMpiCommunicator (runtime/comm/mpi/mpi_comm.h), which also
// provides rank and size and ends the job on abort(), selects CUDA device `device` (-1: this
// rank's local rank on its node, modulo the visible devices), broadcasts rank 0's
// ncclUniqueId over MPI and creates the NCCL communicator.
Status createNcclCommunicator(const CommOptions &options, int device,
                              std::unique_ptr<Communicator> *out);

} // namespace shardc::runtime
