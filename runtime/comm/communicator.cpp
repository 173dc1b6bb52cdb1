#include "runtime/comm/communicator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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
  if (dtype == CommDType::Bytes &&
      (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter))
    return Status::error("cannot sum raw bytes (CommDType::Bytes is for all_gather, all_to_all "
                         "and send_recv only)");
  return Status::ok();
}

uint64_t CommCounters::totalBytesSent() const {
  uint64_t total = 0;
  for (uint64_t bytes : bytesSent)
    total += bytes;
  return total;
}

Status checkTransfer(int rank, int size, const void *send, size_t sendCount, int to,
                     const void *recv, size_t recvCount, int from, CommDType dtype) {
  SHARDC_RETURN_IF_ERROR(checkCommDType(CollectiveKind::SendRecv, dtype));
  auto checkPeer = [&](int peer, const char *what) -> Status {
    if (peer == Communicator::kNoPeer)
      return Status::ok();
    if (peer < 0 || peer >= size)
      return Status::error(std::string("no rank ") + std::to_string(peer) + " to " + what +
                           " (the communicator has " + std::to_string(size) + ")");
    if (peer == rank)
      return Status::error(std::string("a rank cannot ") + what + " itself");
    return Status::ok();
  };
  SHARDC_RETURN_IF_ERROR(checkPeer(to, "send to"));
  SHARDC_RETURN_IF_ERROR(checkPeer(from, "receive from"));
  if (to == Communicator::kNoPeer && sendCount > 0)
    return Status::error(std::to_string(sendCount) + " elements to send but no rank to send to");
  if (from == Communicator::kNoPeer && recvCount > 0)
    return Status::error(std::to_string(recvCount) +
                         " elements to receive but no rank to receive from");
  if (to == Communicator::kNoPeer && from == Communicator::kNoPeer)
    return Status::error("no rank to send to or receive from");
  const size_t elementBytes = commDTypeSize(dtype);
  const size_t limit = std::numeric_limits<size_t>::max() / elementBytes;
  if (sendCount > limit || recvCount > limit)
    return Status::error(std::to_string(std::max(sendCount, recvCount)) +
                         " elements is too many");
  if ((sendCount > 0 && send == nullptr) || (recvCount > 0 && recv == nullptr))
    return Status::error("null buffer");
  const auto s0 = reinterpret_cast<uintptr_t>(send), r0 = reinterpret_cast<uintptr_t>(recv);
  const size_t sendBytes = sendCount * elementBytes, recvBytes = recvCount * elementBytes;
  if (sendBytes > 0 && recvBytes > 0 && s0 < r0 + recvBytes && r0 < s0 + sendBytes)
    return Status::error("the send and receive buffers overlap");
  return Status::ok();
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
