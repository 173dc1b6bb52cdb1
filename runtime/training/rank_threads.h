// Runs the ranks of a local world (backend "local": the ranks are threads of this process) and
// reduces their failures to the one that caused them.
//
// When one rank fails, the others fail too: their next collective cannot complete. Reporting
// every rank's error would bury the cause under N-1 consequences ("rank 2 failed: ..."), so a
// failing rank records its error and only then calls its communicator's abort(cause), which
// makes the other ranks' pending and future collectives fail at once instead of waiting for the
// timeout. Every failure an abort provokes therefore comes after the one that caused it, and the
// first failure recorded is the root cause.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/support/status.h"

#include <functional>
#include <vector>

namespace shardc::runtime {

// Runs body(r) on its own thread for every rank r of `comms` (comms[r] is rank r's
// communicator), and returns once every thread has ended: ok when every body succeeded, else
// "rank R: cause" for the first failure (a cause that already starts with "rank R: ", as the
// collectives' errors do, as it is). A body that throws fails with "internal error: ...".
Status runRankThreads(const std::vector<Communicator *> &comms,
                      const std::function<Status(int rank)> &body);

} // namespace shardc::runtime
