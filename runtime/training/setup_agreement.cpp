#include "runtime/training/setup_agreement.h"

#include <vector>

namespace shardc::runtime {

Status agreeOnSetup(Communicator *comm, const Status &setup, double timeoutSeconds, bool *stop) {
  *stop = !setup.isOk();
  if (comm == nullptr)
    return setup;
  const float failed = setup.isOk() ? 0.0f : 1.0f;
  std::vector<float> all(static_cast<size_t>(comm->size()));
  Status exchanged;
  {
    CommTimeoutScope longer(comm, timeoutSeconds);
    exchanged = comm->allGather(&failed, all.data(), 1);
  }
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
  const float here = 1.0f;
  std::vector<float> all(static_cast<size_t>(comm->size()));
  CommTimeoutScope longer(comm, timeoutSeconds);
  Status status = comm->allGather(&here, all.data(), 1);
  if (!status.isOk())
    return Status::error(status.message() + " (" + what + ")");
  return Status::ok();
}

} // namespace shardc::runtime
