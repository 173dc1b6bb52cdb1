#include "runtime/comm/communicator.h"

#include <cmath>
#include <sstream>

namespace shardc::runtime {

const char *collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGather:
    return "all_gather";
  }
  return "unknown_collective";
}

uint64_t CommCounters::totalBytesSent() const {
  uint64_t total = 0;
  for (uint64_t bytes : bytesSent)
    total += bytes;
  return total;
}

Status validateCommOptions(const CommOptions &options) {
  if (!(options.timeoutSeconds > 0) || !std::isfinite(options.timeoutSeconds)) {
    std::ostringstream message;
    message << "communicator: the timeout must be a positive number of seconds, got "
            << options.timeoutSeconds;
    return Status::error(message.str());
  }
  return Status::ok();
}

std::string commTimeoutMessage(double timeoutSeconds, int peer) {
  // Default stream formatting prints 30 as "30" and 0.25 as "0.25".
  std::ostringstream message;
  message << "timed out after " << timeoutSeconds << " s waiting for rank " << peer;
  return message.str();
}

std::string commPeerFailedMessage(int failedRank, const std::string &cause) {
  return "rank " + std::to_string(failedRank) + " failed: " + cause;
}

} // namespace shardc::runtime
