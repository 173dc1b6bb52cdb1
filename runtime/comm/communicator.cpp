#include "runtime/comm/communicator.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace shardc::runtime {

size_t commDTypeSize(CommDType dtype) {
  switch (dtype) {
  case CommDType::F32:
    return 4;
  case CommDType::BF16:
  case CommDType::F16:
    return 2;
  case CommDType::Bytes:
    return 1;
  }
  return 0;
}

const char *commDTypeName(CommDType dtype) {
  switch (dtype) {
  case CommDType::F32:
    return "f32";
  case CommDType::BF16:
    return "bf16";
  case CommDType::F16:
    return "f16";
  case CommDType::Bytes:
    return "bytes";
  }
  return "unknown";
}

Status checkCommDType(CollectiveKind kind, CommDType dtype) {
  if (commDTypeSize(dtype) == 0)
    return Status::error("unknown element type " + std::to_string(static_cast<int>(dtype)));
  if (dtype == CommDType::Bytes && kind != CollectiveKind::AllGather &&
      kind != CollectiveKind::AllToAll)
    return Status::error(
        "cannot sum raw bytes (CommDType::Bytes is for all_gather and all_to_all only)");
  return Status::ok();
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

int Communicator::worldRankOf(int rank) const {
  if (worldRanks_.empty() || rank < 0 || rank >= static_cast<int>(worldRanks_.size()))
    return rank;
  return worldRanks_[static_cast<size_t>(rank)];
}

std::string Communicator::groupSuffix() const {
  if (worldRanks_.empty())
    return "";
  std::string text = " in group";
  if (!groupName_.empty())
    text += " '" + groupName_ + "'";
  // A large group is named by its size and first members: the whole list helps nobody.
  constexpr size_t kListed = 8;
  text += " (";
  if (worldRanks_.size() > kListed)
    text += std::to_string(worldRanks_.size()) + " ranks: ";
  else
    text += worldRanks_.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < worldRanks_.size() && i < kListed; ++i)
    text += (i ? ", " : "") + std::to_string(worldRanks_[i]);
  if (worldRanks_.size() > kListed)
    text += ", ...";
  return text + ")";
}

Status Communicator::labelled(const char *what, uint64_t sequence, const Status &status) const {
  if (status.isOk())
    return status;
  return Status::error("rank " + std::to_string(worldRank()) + ": " + what + " #" +
                       std::to_string(sequence) + groupSuffix() + ": " + status.message());
}

std::vector<int> splitMembers(const std::vector<int32_t> &colorKey, int color) {
  std::vector<int> members;
  if (color < 0)
    return members;
  for (size_t r = 0; 2 * r + 1 < colorKey.size(); ++r)
    if (colorKey[2 * r] == color)
      members.push_back(static_cast<int>(r));
  // Stable: equal keys keep the order of their ranks.
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return colorKey[2 * static_cast<size_t>(a) + 1] < colorKey[2 * static_cast<size_t>(b) + 1];
  });
  return members;
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
