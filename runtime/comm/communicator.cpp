#include "runtime/comm/communicator.h"

#include <algorithm>
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

Status Communicator::setTimeoutSeconds(double seconds) {
  CommOptions options;
  options.timeoutSeconds = seconds;
  SHARDC_RETURN_IF_ERROR(validateCommOptions(options));
  timeoutSeconds_ = seconds;
  return Status::ok();
}

std::chrono::steady_clock::time_point Communicator::deadlineFromNow() const {
  constexpr double kLongestWaitSeconds = 365.0 * 24 * 3600;
  using Clock = std::chrono::steady_clock;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                            std::min(timeoutSeconds_, kLongestWaitSeconds)));
}

CommTimeoutScope::CommTimeoutScope(Communicator *comm, double atLeastSeconds) : comm_(comm) {
  if (comm_ == nullptr)
    return;
  previous_ = comm_->timeoutSeconds();
  if (atLeastSeconds > previous_ && !comm_->setTimeoutSeconds(atLeastSeconds).isOk())
    comm_ = nullptr; // an invalid timeout leaves the usual one in place
}

CommTimeoutScope::~CommTimeoutScope() {
  if (comm_ != nullptr)
    (void)comm_->setTimeoutSeconds(previous_);
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
