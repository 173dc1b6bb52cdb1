#include "runtime/comm/local/local_comm.h"

#include "runtime/comm/ring.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

namespace shardc::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// A message from one rank to another. The sender posts it and waits until the receiver has
// copied it (or refused it), so the sender's buffer is never read after sendRecv returns.
struct Mailbox {
  enum class State { Empty, Posted, Copying, Taken, Refused };
  State state = State::Empty;
  const void *data = nullptr;
  size_t bytes = 0;
  uint64_t sequence = 0;
  std::string refusal; // why the receiver refused it (State::Refused)
};

// What the ranks of one world share.
class LocalWorld {
public:
  explicit LocalWorld(int size)
      : size_(size), mailboxes_(static_cast<size_t>(size) * static_cast<size_t>(size)) {}

  // One ring step of `rank`, which waits until `deadline` (its own communicator's timeout of
  // `timeoutSeconds`, named in the message when it passes).
  Status sendRecv(int rank, const void *send, size_t sendBytes, int to, void *recv,
                  size_t recvBytes, int from, uint64_t sequence, Clock::time_point deadline,
                  double timeoutSeconds);

  void abort(int rank, const std::string &cause) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The first failure is the one every rank reports.
    if (failedRank_ < 0) {
      failedRank_ = rank;
      failedCause_ = cause;
    }
    changed_.notify_all();
  }

private:
  Mailbox &mailbox(int from, int to) {
    return mailboxes_[static_cast<size_t>(from) * static_cast<size_t>(size_) +
                      static_cast<size_t>(to)];
  }
  Status failure() const { return Status::error(commPeerFailedMessage(failedRank_, failedCause_)); }
  // Takes back a message nobody will read; waits out a copy in progress (a bounded memcpy), so
  // that the sender's buffer is free when this returns. Returns the state it found then (Taken:
  // the receiver got the message after all).
  Mailbox::State withdraw(std::unique_lock<std::mutex> &lock, Mailbox &box);

  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_; // any mailbox or the failure state changed
  std::vector<Mailbox> mailboxes_;  // [from * size + to]
  int failedRank_ = -1;
  std::string failedCause_;
};

Mailbox::State LocalWorld::withdraw(std::unique_lock<std::mutex> &lock, Mailbox &box) {
  changed_.wait(lock, [&] { return box.state != Mailbox::State::Copying; });
  const Mailbox::State found = box.state;
  box.state = Mailbox::State::Empty;
  changed_.notify_all();
  return found;
}

Status LocalWorld::sendRecv(int rank, const void *send, size_t sendBytes, int to, void *recv,
                            size_t recvBytes, int from, uint64_t sequence,
                            Clock::time_point deadline, double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failedRank_ >= 0)
    return failure();

  Mailbox &outgoing = mailbox(rank, to);
  if (outgoing.state != Mailbox::State::Empty)
    return Status::error("internal error: the previous message to rank " + std::to_string(to) +
                         " is still pending");
  outgoing.state = Mailbox::State::Posted;
  outgoing.data = send;
  outgoing.bytes = sendBytes;
  outgoing.sequence = sequence;
  changed_.notify_all();

  // Receive: copy the peer's message outside the lock, so that ranks copy in parallel. A
  // receiver that refused our message will not send its own, so a refusal ends the wait too.
  Mailbox &incoming = mailbox(from, rank);
  const bool arrived = changed_.wait_until(lock, deadline, [&] {
    return incoming.state == Mailbox::State::Posted || outgoing.state == Mailbox::State::Refused ||
           failedRank_ >= 0;
  });
  if (outgoing.state == Mailbox::State::Refused) {
    Status refused = Status::error(outgoing.refusal);
    outgoing.state = Mailbox::State::Empty;
    return refused;
  }
  if (!arrived || incoming.state != Mailbox::State::Posted) {
    withdraw(lock, outgoing);
    return failedRank_ >= 0 ? failure() : Status::error(commTimeoutMessage(timeoutSeconds, from));
  }
  if (incoming.sequence != sequence || incoming.bytes != recvBytes) {
    const std::string mismatch =
        "rank " + std::to_string(from) + " sent " + std::to_string(incoming.bytes) +
        " bytes for collective #" + std::to_string(incoming.sequence) + " where rank " +
        std::to_string(rank) + " expected " + std::to_string(recvBytes) + " bytes for #" +
        std::to_string(sequence) + " (the ranks disagree on the collectives)";
    incoming.state = Mailbox::State::Refused;
    incoming.refusal = mismatch;
    changed_.notify_all();
    withdraw(lock, outgoing);
    return Status::error(mismatch);
  }
  incoming.state = Mailbox::State::Copying;
  lock.unlock();
  if (recvBytes > 0)
    std::memcpy(recv, incoming.data, recvBytes);
  lock.lock();
  incoming.state = Mailbox::State::Taken;
  changed_.notify_all();

  // Our own message must be taken before `send` may change.
  const bool settled = changed_.wait_until(lock, deadline, [&] {
    return outgoing.state == Mailbox::State::Taken || outgoing.state == Mailbox::State::Refused ||
           failedRank_ >= 0;
  });
  if (outgoing.state == Mailbox::State::Refused) {
    Status refused = Status::error(outgoing.refusal);
    outgoing.state = Mailbox::State::Empty;
    return refused;
  }
  // A copy that finishes while we give up still counts: both halves of the step are done.
  if (withdraw(lock, outgoing) == Mailbox::State::Taken)
    return Status::ok();
  return settled ? failure() : Status::error(commTimeoutMessage(timeoutSeconds, to));
}

// One rank's view of the world.
class LocalCommunicator final : public RingCommunicator, private Transport {
public:
  LocalCommunicator(std::shared_ptr<LocalWorld> world, int rank, int size, double timeoutSeconds)
      : RingCommunicator(rank, size), world_(std::move(world)) {
    timeoutSeconds_ = timeoutSeconds;
  }

  const char *backendName() const override { return "local"; }
  void abort(const std::string &cause) override { world_->abort(rank(), cause); }

protected:
  Transport &transport() override { return *this; }

private:
  Status sendRecv(const void *send, size_t sendBytes, int to, void *recv, size_t recvBytes,
                  int from, uint64_t sequence) override {
    return world_->sendRecv(rank(), send, sendBytes, to, recv, recvBytes, from, sequence,
                            deadlineFromNow(), timeoutSeconds_);
  }

  std::shared_ptr<LocalWorld> world_;
};

} // namespace

Status createLocalWorld(int size, const CommOptions &options,
                        std::vector<std::unique_ptr<Communicator>> *out) {
  if (size < 1)
    return Status::error("local communicator: the world needs at least 1 rank, got " +
                         std::to_string(size));
  SHARDC_RETURN_IF_ERROR(validateCommOptions(options));
  auto world = std::make_shared<LocalWorld>(size);
  out->clear();
  for (int rank = 0; rank < size; ++rank)
    out->push_back(std::make_unique<LocalCommunicator>(world, rank, size, options.timeoutSeconds));
  return Status::ok();
}

} // namespace shardc::runtime
