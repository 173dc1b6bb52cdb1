// Backend "local": the N ranks of a world are threads of one process (the embedded default when
// no MPI launcher started us, and the harness of every multi-rank test).
//
// The ranks exchange data through mailboxes under one mutex: a sender posts a pointer to its
// chunk, the receiver copies it straight into its own buffer and marks it taken, so a ring step
// costs one copy and allocates nothing. The collectives are the shared ring (runtime/comm/ring.h),
// bit-identical to the mpi backend.
//
// split() exchanges every rank's color and key over the ring (so a rank that never arrives is a
// timeout naming it), then the members of each group share a new set of mailboxes. A world and
// its groups share one lock and one failure state: abort() on any of them fails the pending and
// future collectives of all of them.
#pragma once

#include "runtime/comm/communicator.h"

#include <memory>
#include <vector>

namespace shardc::runtime {

// Creates the `size` communicators of one world; (*out)[r] is rank r's. Each is meant for one
// thread (its rank's); abort() may be called from any thread. The world lives until the last of
// them is destroyed. Fails when size < 1 or the options are invalid.
Status createLocalWorld(int size, const CommOptions &options,
                        std::vector<std::unique_ptr<Communicator>> *out);

} // namespace shardc::runtime
