// Ends the setup of a multi-rank run with every rank knowing whether all of them are ready.
//
// Setup errors (a missing data file, a damaged checkpoint, a bundle of the wrong world size)
// usually strike every rank alike. Letting each rank fail on its own would report the same cause
// once per rank, from whichever rank happened to get there first. Instead every rank tells all
// the others whether its setup succeeded (one all_gather of one float per rank) and only the
// lowest failing rank reports its error: the report is the same however the ranks are timed,
// and the other ranks stop quietly, with no abort and no timeout.
//
// Ranks reach the exchange at different times: loading a large bundle or data set takes one rank
// longer than another. The exchange therefore waits for up to `timeoutSeconds` (shardrun's
// --io-timeout), not the communicator's timeout, which is sized for the gaps between the
// collectives of a step. waitForRanks is the same wait for other long work: rank 0 writing a
// checkpoint while the others would otherwise wait in the next step's first collective.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/support/status.h"

#include <string>

namespace shardc::runtime {

// A collective: every rank of `comm` calls it once, with the result of its own setup.
// Returns the rank's own error when it is the lowest rank whose setup failed, an error when the
// exchange itself fails, and ok otherwise; *stop is true when any rank failed, i.e. when the
// run must end here (quietly, unless the result is an error).
Status agreeOnSetup(Communicator *comm, const Status &setup, double timeoutSeconds, bool *stop);

// A collective: returns once every rank of `comm` (null: none) has called it, waiting up to
// `timeoutSeconds` for the last; `what` says what they waited through, after the error
// ("rank 1: all_gather #7: timed out after 600 s waiting for rank 0 (while rank 0 writes the
// checkpoint of step 100)").
Status waitForRanks(Communicator *comm, double timeoutSeconds, const std::string &what);

} // namespace shardc::runtime
