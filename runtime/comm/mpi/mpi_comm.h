// Backend "mpi": one process per rank, started by mpirun/mpiexec/srun (Open MPI 4.1 tested).
// Built only when CMake finds MPI: targets that link shardc_comm_mpi see SHARDC_HAVE_MPI
// defined, and only they may include this header (it does not include mpi.h itself).
//
// The collectives are the shared ring (runtime/comm/ring.h) over MPI_Isend/MPI_Irecv on a
// private duplicate of MPI_COMM_WORLD, polled with MPI_Test against the deadline, so a rank
// that stops answering gives "timed out after 30 s waiting for rank 3" instead of a hang, and
// the results are bit-identical to the local backend's. Every MPI call is checked (the error
// handler is MPI_ERRORS_RETURN) and its error string reported.
//
// split() exchanges every rank's color and key over the ring first (with the deadline, which
// MPI_Comm_split lacks), then calls MPI_Comm_split; each group is an MPI communicator of its
// own, so its messages can never meet another group's. abort() on any of them ends the job.
#pragma once

#include "runtime/comm/communicator.h"

#include <cstddef>
#include <memory>

namespace shardc::runtime {

// Initialises MPI (MPI_Init_thread, unless the program already did) and returns this process's
// communicator over MPI_COMM_WORLD. MPI is finalised when the last communicator made here is
// destroyed, unless a collective failed (MPI_Finalize could then wait for a dead peer; the job
// should end through abort() or a non-zero exit instead). MPI cannot be initialised twice in a
// process, so creating one after the last was destroyed is an error.
// abort(cause) calls MPI_Abort(MPI_COMM_WORLD, 1), which ends every rank: the caller prints
// the cause first, as abort() prints nothing.
Status createMpiCommunicator(const CommOptions &options, std::unique_ptr<Communicator> *out);

// Broadcasts data[0, bytes) from rank `root` to every rank of `comm`, which must come from
// createMpiCommunicator (the nccl backend's bootstrap: rank 0's ncclUniqueId). Waits at most
// the communicator's timeout.
Status mpiBroadcastBytes(Communicator &comm, void *data, size_t bytes, int root);

} // namespace shardc::runtime
