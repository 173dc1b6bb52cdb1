#include "runtime/comm/local/local_comm.h"

#include "runtime/comm/ring.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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

// A posted message (Transport::postSend): a copy the sender no longer waits for, queued in
// the order it was sent until the receiver takes it.
struct QueuedMessage {
  std::vector<unsigned char> data;
  uint64_t sequence = 0;
};

// What a world and every group split from it share: one lock and one failure, so that an
// abort anywhere wakes every rank waiting in any of them. (The ranks of one process are few;
// one lock for all of them costs nothing measurable, as the copies happen outside it.)
struct LocalFamily {
  std::mutex mutex;
  std::condition_variable changed; // any mailbox or the failure state changed
  int failedRank = -1;             // in the world
  std::string failedCause;
};

// What the ranks of one world, or of one group, share.
class LocalWorld {
public:
  // `worldRanks`: the world rank of each of its ranks (messages name ranks by them).
  LocalWorld(std::shared_ptr<LocalFamily> family, std::vector<int> worldRanks)
      : size_(static_cast<int>(worldRanks.size())), worldRanks_(std::move(worldRanks)),
        family_(std::move(family)),
        mailboxes_(static_cast<size_t>(size_) * static_cast<size_t>(size_)),
        queues_(mailboxes_.size()), mutex_(family_->mutex), changed_(family_->changed) {}

  // One ring step or transfer of `rank` (Transport::peerSendRecv; a negative peer skips that
  // half), which waits until `deadline` (its own communicator's timeout of `timeoutSeconds`,
  // named in the message when it passes).
  Status sendRecv(int rank, const void *send, size_t sendBytes, int to, uint64_t sendSequence,
                  void *recv, size_t recvBytes, int from, uint64_t recvSequence,
                  Clock::time_point deadline, double timeoutSeconds);
  // Queues a copy of send[0, sendBytes) for `to` (Transport::postSend).
  Status post(int rank, const void *send, size_t sendBytes, int to, uint64_t sequence);
  // Waits until `to`s have taken every message `rank` queued, or the deadline.
  Status finishPosted(int rank, Clock::time_point deadline, double timeoutSeconds);

  // `rank`: its rank in this world.
  void abort(int rank, const std::string &cause) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The first failure is the one every rank reports.
    if (family_->failedRank < 0) {
      family_->failedRank = worldRank(rank);
      family_->failedCause = cause;
    }
    changed_.notify_all();
  }

  // The world of the group `color` of split number `split` of this world, whose members have
  // the world ranks `worldRanks`: the first member to ask creates it, the last one to take it
  // forgets it. Never waits: the split's exchange already brought every rank here.
  std::shared_ptr<LocalWorld> groupWorld(uint64_t split, int color,
                                         const std::vector<int> &worldRanks);

private:
  Mailbox &mailbox(int from, int to) {
    return mailboxes_[static_cast<size_t>(from) * static_cast<size_t>(size_) +
                      static_cast<size_t>(to)];
  }
  std::deque<QueuedMessage> &queue(int from, int to) {
    return queues_[static_cast<size_t>(from) * static_cast<size_t>(size_) +
                   static_cast<size_t>(to)];
  }
  int worldRank(int rank) const { return worldRanks_[static_cast<size_t>(rank)]; }
  Status failure() const {
    return Status::error(commPeerFailedMessage(family_->failedRank, family_->failedCause));
  }
  bool failed() const { return family_->failedRank >= 0; }
  // Takes back a message nobody will read; waits out a copy in progress (a bounded memcpy), so
  // that the sender's buffer is free when this returns. Returns the state it found then (Taken:
  // the receiver got the message after all).
  Mailbox::State withdraw(std::unique_lock<std::mutex> &lock, Mailbox &box);

  struct PendingGroup {
    std::shared_ptr<LocalWorld> world;
    size_t untaken = 0; // members that have not taken it yet
  };

  const int size_;
  const std::vector<int> worldRanks_;
  const std::shared_ptr<LocalFamily> family_;
  std::vector<Mailbox> mailboxes_; // [from * size + to]
  std::vector<std::deque<QueuedMessage>> queues_; // [from * size + to]: posted, not yet taken
  std::mutex &mutex_;              // the family's
  std::condition_variable &changed_;
  std::map<std::pair<uint64_t, int>, PendingGroup> pendingGroups_; // by (split, color)
};

Mailbox::State LocalWorld::withdraw(std::unique_lock<std::mutex> &lock, Mailbox &box) {
  changed_.wait(lock, [&] { return box.state != Mailbox::State::Copying; });
  const Mailbox::State found = box.state;
  box.state = Mailbox::State::Empty;
  changed_.notify_all();
  return found;
}

std::shared_ptr<LocalWorld> LocalWorld::groupWorld(uint64_t split, int color,
                                                   const std::vector<int> &worldRanks) {
  std::lock_guard<std::mutex> lock(mutex_);
  PendingGroup &pending = pendingGroups_[{split, color}];
  if (pending.world == nullptr) {
    pending.world = std::make_shared<LocalWorld>(family_, worldRanks);
    pending.untaken = worldRanks.size();
  }
  std::shared_ptr<LocalWorld> world = pending.world;
  if (--pending.untaken == 0)
    pendingGroups_.erase({split, color});
  return world;
}

Status LocalWorld::sendRecv(int rank, const void *send, size_t sendBytes, int to,
                            uint64_t sendSequence, void *recv, size_t recvBytes, int from,
                            uint64_t recvSequence, Clock::time_point deadline,
                            double timeoutSeconds) {
  const bool sending = to >= 0, receiving = from >= 0;
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed())
    return failure();

  Mailbox *outgoing = sending ? &mailbox(rank, to) : nullptr;
  if (sending) {
    if (outgoing->state != Mailbox::State::Empty)
      return Status::error("internal error: the previous message to rank " + std::to_string(to) +
                           " is still pending");
    outgoing->state = Mailbox::State::Posted;
    outgoing->data = send;
    outgoing->bytes = sendBytes;
    outgoing->sequence = sendSequence;
    changed_.notify_all();
  }
  auto refusedOutgoing = [&] { return sending && outgoing->state == Mailbox::State::Refused; };
  auto takeRefusal = [&] {
    Status refused = Status::error(outgoing->refusal);
    outgoing->state = Mailbox::State::Empty;
    return refused;
  };

  if (receiving) {
    // Receive: copy the peer's message outside the lock, so that ranks copy in parallel. A
    // receiver that refused our message will not send its own, so a refusal ends the wait too.
    Mailbox &incoming = mailbox(from, rank);
    std::deque<QueuedMessage> &queued = queue(from, rank);
    const bool arrived = changed_.wait_until(lock, deadline, [&] {
      return !queued.empty() || incoming.state == Mailbox::State::Posted || refusedOutgoing() ||
             failed();
    });
    if (refusedOutgoing())
      return takeRefusal();
    auto mismatchText = [&](size_t sentBytes, uint64_t sentSequence) {
      return "rank " + std::to_string(worldRank(from)) + " sent " + std::to_string(sentBytes) +
             " bytes for " + describeMessageSequence(sentSequence) + " where rank " +
             std::to_string(worldRank(rank)) + " expected " + std::to_string(recvBytes) +
             " bytes for " + describeMessageSequence(recvSequence) +
             ((sentSequence | recvSequence) & kTransferSequenceBit
                  ? " (the ranks disagree on the transfers)"
                  : " (the ranks disagree on the collectives)");
    };
    if (!queued.empty()) {
      // A posted message went before any the sender may have put in the mailbox since.
      QueuedMessage message = std::move(queued.front());
      queued.pop_front();
      changed_.notify_all();
      if (message.sequence != recvSequence || message.data.size() != recvBytes) {
        // The sender is not waiting to be told: the world fails, and it learns at its next call.
        const std::string mismatch = mismatchText(message.data.size(), message.sequence);
        if (family_->failedRank < 0) {
          family_->failedRank = worldRank(rank);
          family_->failedCause = mismatch;
        }
        if (sending)
          withdraw(lock, *outgoing);
        return Status::error(mismatch);
      }
      lock.unlock();
      if (recvBytes > 0)
        std::memcpy(recv, message.data.data(), recvBytes);
      lock.lock();
    } else {
      if (!arrived || incoming.state != Mailbox::State::Posted) {
        if (sending)
          withdraw(lock, *outgoing);
        return failed() ? failure()
                        : Status::error(commTimeoutMessage(timeoutSeconds, worldRank(from)));
      }
      if (incoming.sequence != recvSequence || incoming.bytes != recvBytes) {
        const std::string mismatch = mismatchText(incoming.bytes, incoming.sequence);
        incoming.state = Mailbox::State::Refused;
        incoming.refusal = mismatch;
        changed_.notify_all();
        if (sending)
          withdraw(lock, *outgoing);
        return Status::error(mismatch);
      }
      incoming.state = Mailbox::State::Copying;
      lock.unlock();
      if (recvBytes > 0)
        std::memcpy(recv, incoming.data, recvBytes);
      lock.lock();
      incoming.state = Mailbox::State::Taken;
      changed_.notify_all();
    }
  }
  if (!sending)
    return Status::ok();

  // Our own message must be taken before `send` may change.
  const bool settled = changed_.wait_until(lock, deadline, [&] {
    return outgoing->state == Mailbox::State::Taken || refusedOutgoing() || failed();
  });
  if (refusedOutgoing())
    return takeRefusal();
  // A copy that finishes while we give up still counts: both halves of the step are done.
  if (withdraw(lock, *outgoing) == Mailbox::State::Taken)
    return Status::ok();
  return settled ? failure() : Status::error(commTimeoutMessage(timeoutSeconds, worldRank(to)));
}

Status LocalWorld::post(int rank, const void *send, size_t sendBytes, int to,
                        uint64_t sequence) {
  // Copied outside the lock, as receives are.
  QueuedMessage message{std::vector<unsigned char>(sendBytes), sequence};
  if (sendBytes > 0)
    std::memcpy(message.data.data(), send, sendBytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed())
    return failure();
  queue(rank, to).push_back(std::move(message));
  changed_.notify_all();
  return Status::ok();
}

Status LocalWorld::finishPosted(int rank, Clock::time_point deadline, double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto waitedFor = [&] {
    for (int to = 0; to < size_; ++to)
      if (!queue(rank, to).empty())
        return to;
    return -1;
  };
  changed_.wait_until(lock, deadline, [&] { return waitedFor() < 0 || failed(); });
  const int peer = waitedFor();
  if (peer < 0)
    return Status::ok();
  return failed() ? failure() : Status::error(commTimeoutMessage(timeoutSeconds, worldRank(peer)));
}

// One rank's view of the world.
class LocalCommunicator final : public RingCommunicator, private Transport {
public:
  // `worldRanks`: empty for a world, else the group's members' world ranks.
  LocalCommunicator(std::shared_ptr<LocalWorld> world, int rank, int size, double timeoutSeconds,
                    std::vector<int> worldRanks = {})
      : RingCommunicator(rank, size), world_(std::move(world)) {
    timeoutSeconds_ = timeoutSeconds;
    worldRanks_ = std::move(worldRanks);
  }

  const char *backendName() const override { return "local"; }
  void abort(const std::string &cause) override { world_->abort(rank(), cause); }

  Status split(int color, int key, std::unique_ptr<Communicator> *out) override {
    out->reset();
    std::vector<int32_t> colorKey;
    uint64_t sequence = 0;
    SHARDC_RETURN_IF_ERROR(exchangeSplitRequests(color, key, &colorKey, &sequence));
    const std::vector<int> members = splitMembers(colorKey, color);
    if (members.empty())
      return Status::ok();
    std::vector<int> worldRanks;
    int groupRank = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      worldRanks.push_back(worldRankOf(members[i]));
      if (members[i] == rank())
        groupRank = static_cast<int>(i);
    }
    *out = std::make_unique<LocalCommunicator>(world_->groupWorld(sequence, color, worldRanks),
                                               groupRank, static_cast<int>(members.size()),
                                               timeoutSeconds_, worldRanks);
    return Status::ok();
  }

protected:
  Transport &transport() override { return *this; }

private:
  Status peerSendRecv(const void *send, size_t sendBytes, int to, uint64_t sendSequence,
                      void *recv, size_t recvBytes, int from, uint64_t recvSequence) override {
    return world_->sendRecv(rank(), send, sendBytes, to, sendSequence, recv, recvBytes, from,
                            recvSequence, deadlineFromNow(), timeoutSeconds_);
  }

  Status postSend(const void *send, size_t sendBytes, int to, uint64_t sequence) override {
    return world_->post(rank(), send, sendBytes, to, sequence);
  }
  Status finishPostedSends() override {
    return world_->finishPosted(rank(), deadlineFromNow(), timeoutSeconds_);
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
  std::vector<int> worldRanks(static_cast<size_t>(size));
  for (int rank = 0; rank < size; ++rank)
    worldRanks[static_cast<size_t>(rank)] = rank;
  auto world = std::make_shared<LocalWorld>(std::make_shared<LocalFamily>(), worldRanks);
  out->clear();
  for (int rank = 0; rank < size; ++rank)
    out->push_back(std::make_unique<LocalCommunicator>(world, rank, size, options.timeoutSeconds));
  return Status::ok();
}

} // namespace shardc::runtime
