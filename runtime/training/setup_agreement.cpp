#include "runtime/training/setup_agreement.h"

#include <vector>

namespace shardc::runtime {

namespace {

// Every rank's `flag`, gathered into *all (one per rank) while waiting up to `timeoutSeconds`
// for the last rank to arrive.
Status gatherFlags(Communicator *comm, float flag, double timeoutSeconds, std::vector<float> *all) {
  all->assign(static_cast<size_t>(comm->size()), 0.0f);
  CommTimeoutScope longer(comm, timeoutSeconds);
  return comm->allGather(&flag, all->data(), 1);
}

} // namespace

Status agreeOnSetup(Communicator *comm, const Status &setup, double timeoutSeconds, bool *stop) {
  *stop = !setup.isOk();
  if (comm == nullptr)
    return setup;
  std::vector<float> all;
  Status exchanged = gatherFlags(comm, setup.isOk() ? 0.0f : 1.0f, timeoutSeconds, &all);
  if (!exchanged.isOk()) {
    *stop = true;
    // The exchange failing says less than this rank's own setup error, if it has one.
    return setup.isOk()
               ? Status::error("waiting for the other ranks to set up: " + exchanged.message())
               : setup;
  }
  for (int r = 0; r < comm->size(); ++r) {
    if (all[static_cast<size_t>(r)] == 0.0f)
      continue;
    *stop = true;
    return r == comm->rank() ? setup : Status::ok();
  }
  return Status::ok();
}

Status waitForRanks(Communicator *comm, double timeoutSeconds, const std::string &what) {
  if (comm == nullptr)
    return Status::ok();
  std::vector<float> all;
  Status status = gatherFlags(comm, 1.0f, timeoutSeconds, &all);
  if (!status.isOk())
    return Status::error(status.message() + " (" + what + ")");
  return Status::ok();
}

} // namespace shardc::runtime
