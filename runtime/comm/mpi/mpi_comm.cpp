#include "runtime/comm/mpi/mpi_comm.h"

#include "runtime/comm/ring.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace shardc::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// MPI counts are ints: larger messages go in pieces of this many bytes.
constexpr size_t kMaxPieceBytes = size_t{1} << 30;

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

Status mpiCheck(int code, const char *call) {
  if (code == MPI_SUCCESS)
    return Status::ok();
  return Status::error(std::string(call) + " failed: " + mpiErrorString(code));
}

// Whether this library initialised MPI, and how many of its communicators are alive: MPI is
// finalised with the last one.
std::mutex gMpiStateMutex;
bool gInitialisedHere = false;
int gLiveCommunicators = 0;

class MpiCommunicator final : public RingCommunicator, private Transport {
public:
  // `worldRanks`: empty for a world, else the group's members' world ranks.
  MpiCommunicator(MPI_Comm comm, int rank, int size, int tagUpperBound, double timeoutSeconds,
                  std::vector<int> worldRanks = {})
      : RingCommunicator(rank, size), comm_(comm), tagUpperBound_(tagUpperBound) {
    timeoutSeconds_ = timeoutSeconds;
    worldRanks_ = std::move(worldRanks);
  }
  ~MpiCommunicator() override;

  const char *backendName() const override { return "mpi"; }
  void abort(const std::string &) override { MPI_Abort(MPI_COMM_WORLD, 1); }
  Status split(int color, int key, std::unique_ptr<Communicator> *out) override;

  Status broadcast(void *data, size_t bytes, int root);

protected:
  Transport &transport() override { return *this; }

private:
  Status peerSendRecv(const void *send, size_t sendBytes, int to, uint64_t sendSequence,
                      void *recv, size_t recvBytes, int from, uint64_t recvSequence) override;
  // One piece of a peerSendRecv: an Irecv and an Isend (either to MPI_PROC_NULL, which
  // completes at once, when that half is skipped), polled until both finish or the deadline.
  Status exchange(const void *send, int sendBytes, int to, int sendTag, void *recv, int recvBytes,
                  int from, int recvTag, Clock::time_point deadline);
  // The tag of message `sequence`: collectives in the lower half of the tag space, transfers
  // in the upper half, so that MPI never matches one with the other.
  int tagOf(uint64_t sequence) const;
  // Polls `request` (which `peer` must complete) until it finishes or the deadline passes.
  Status await(MPI_Request *request, int peer, Clock::time_point deadline, MPI_Status *status);
  // Cancels what is still pending after a failure, so that MPI stops touching our buffers.
  void cancel(MPI_Request *request);
  Status postSend(const void *send, size_t sendBytes, int to, uint64_t sequence) override;
  Status finishPostedSends() override;
  // Forgets the posted sends at the front that MPI has finished.
  Status reapPostedSends();
  Status fail(Status status) {
    if (failure_.empty())
      failure_ = status.message();
    return status;
  }

  // A posted message: the copy its requests (one per piece) read until they finish.
  struct PostedSend {
    std::vector<unsigned char> data;
    std::vector<MPI_Request> requests;
    int peer = 0;
  };

  MPI_Comm comm_;
  int tagUpperBound_;
  std::deque<PostedSend> posted_; // in the order they were posted
  // The first failure: later collectives refuse to run, since a stale message of the failed
  // one may still arrive, and the destructor skips MPI_Finalize.
  std::string failure_;
};

MpiCommunicator::~MpiCommunicator() {
  std::lock_guard<std::mutex> lock(gMpiStateMutex);
  if (!failure_.empty())
    return;
  // A run that ended without finishing its posted sends: MPI must not read freed copies, nor
  // finalise under them.
  for (PostedSend &send : posted_)
    for (MPI_Request &request : send.requests)
      cancel(&request);
  // Errors here have nowhere to go; MPI reports them itself.
  (void)MPI_Comm_free(&comm_);
  if (--gLiveCommunicators == 0 && gInitialisedHere)
    (void)MPI_Finalize();
}

Status MpiCommunicator::await(MPI_Request *request, int peer, Clock::time_point deadline,
                              MPI_Status *status) {
  // Spin first (a ring step is usually answered within microseconds), then yield, then sleep,
  // so that oversubscribed ranks leave the cores to the peers they wait for.
  for (int polls = 0;; ++polls) {
    int done = 0;
    const int code = MPI_Test(request, &done, status);
    if (code != MPI_SUCCESS)
      return mpiCheck(code, "MPI_Test");
    if (done)
      return Status::ok();
    if (Clock::now() > deadline)
      return Status::error(commTimeoutMessage(timeoutSeconds_, worldRankOf(peer)));
    if (polls < 1000)
      continue;
    if (polls < 20000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void MpiCommunicator::cancel(MPI_Request *request) {
  if (*request == MPI_REQUEST_NULL)
    return;
  (void)MPI_Cancel(request);
  // A cancelled request completes promptly; give it a second, then let MPI free it later.
  const auto until = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < until) {
    int done = 0;
    MPI_Status status;
    if (MPI_Test(request, &done, &status) != MPI_SUCCESS || done)
      return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  (void)MPI_Request_free(request);
}

Status MpiCommunicator::exchange(const void *send, int sendBytes, int to, int sendTag, void *recv,
                                 int recvBytes, int from, int recvTag,
                                 Clock::time_point deadline) {
  MPI_Request recvRequest = MPI_REQUEST_NULL, sendRequest = MPI_REQUEST_NULL;
  Status status = mpiCheck(
      MPI_Irecv(recv, recvBytes, MPI_BYTE, from, recvTag, comm_, &recvRequest), "MPI_Irecv");
  if (status.isOk())
    status = mpiCheck(MPI_Isend(const_cast<void *>(send), sendBytes, MPI_BYTE, to, sendTag, comm_,
                                &sendRequest),
                      "MPI_Isend");
  MPI_Status received;
  if (status.isOk())
    status = await(&recvRequest, from, deadline, &received);
  if (status.isOk()) {
    int count = 0;
    status = mpiCheck(MPI_Get_count(&received, MPI_BYTE, &count), "MPI_Get_count");
    if (status.isOk() && count != recvBytes)
      status = Status::error(
          "rank " + std::to_string(worldRankOf(from)) + " sent " + std::to_string(count) +
          " bytes where rank " + std::to_string(worldRank()) + " expected " +
          std::to_string(recvBytes) +
          (recvTag > tagUpperBound_ / 2 ? " (the ranks disagree on the transfers)"
                                        : " (the ranks disagree on the collectives)"));
  }
  if (status.isOk()) {
    MPI_Status sent;
    status = await(&sendRequest, to, deadline, &sent);
  }
  if (!status.isOk()) {
    cancel(&recvRequest);
    cancel(&sendRequest);
  }
  return status;
}

Status MpiCommunicator::reapPostedSends() {
  while (!posted_.empty()) {
    int done = 0;
    PostedSend &front = posted_.front();
    const int code = MPI_Testall(static_cast<int>(front.requests.size()), front.requests.data(),
                                 &done, MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS)
      return fail(mpiCheck(code, "MPI_Testall"));
    if (!done)
      break;
    posted_.pop_front();
  }
  return Status::ok();
}

Status MpiCommunicator::postSend(const void *send, size_t sendBytes, int to, uint64_t sequence) {
  if (!failure_.empty())
    return Status::error("the communicator failed earlier: " + failure_);
  SHARDC_RETURN_IF_ERROR(reapPostedSends());
  PostedSend &message = posted_.emplace_back();
  message.peer = to;
  message.data.assign(static_cast<const unsigned char *>(send),
                      static_cast<const unsigned char *>(send) + sendBytes);
  // In pieces as peerSendRecv receives them, and at least one, so an empty message is matched.
  const int tag = tagOf(sequence);
  size_t sent = 0;
  do {
    const size_t piece = std::min(sendBytes - sent, kMaxPieceBytes);
    MPI_Request &request = message.requests.emplace_back(MPI_REQUEST_NULL);
    Status status = mpiCheck(MPI_Isend(message.data.data() + sent, static_cast<int>(piece),
                                       MPI_BYTE, to, tag, comm_, &request),
                             "MPI_Isend");
    if (!status.isOk())
      return fail(status);
    sent += piece;
  } while (sent < sendBytes);
  return Status::ok();
}

Status MpiCommunicator::finishPostedSends() {
  const Clock::time_point until = deadlineFromNow();
  while (!posted_.empty()) {
    PostedSend &front = posted_.front();
    for (MPI_Request &request : front.requests) {
      MPI_Status status;
      Status waited = await(&request, front.peer, until, &status);
      if (!waited.isOk())
        return fail(waited);
    }
    posted_.pop_front();
  }
  return Status::ok();
}

int MpiCommunicator::tagOf(uint64_t sequence) const {
  // Tags tell messages apart, so one from another collective or transfer is never taken as
  // data. MPI guarantees an upper bound of at least 32767.
  const uint64_t half = static_cast<uint64_t>(tagUpperBound_) / 2;
  if (sequence & kTransferSequenceBit)
    return static_cast<int>(half + 1 + (sequence & ~kTransferSequenceBit) % half);
  return static_cast<int>(sequence % (half + 1));
}

Status MpiCommunicator::peerSendRecv(const void *send, size_t sendBytes, int to,
                                     uint64_t sendSequence, void *recv, size_t recvBytes,
                                     int from, uint64_t recvSequence) {
  if (!failure_.empty())
    return Status::error("the communicator failed earlier: " + failure_);
  const int sendTag = tagOf(sendSequence), recvTag = tagOf(recvSequence);
  const int sendPeer = to < 0 ? MPI_PROC_NULL : to, recvPeer = from < 0 ? MPI_PROC_NULL : from;
  const Clock::time_point until = deadlineFromNow();
  const auto *sendBytesPtr = static_cast<const unsigned char *>(send);
  auto *recvBytesPtr = static_cast<unsigned char *>(recv);
  // One exchange per piece, and at least one, so that even an empty message is matched.
  size_t sent = 0, received = 0;
  do {
    const size_t sendPiece = std::min(sendBytes - sent, kMaxPieceBytes);
    const size_t recvPiece = std::min(recvBytes - received, kMaxPieceBytes);
    Status status = exchange(sendBytesPtr + sent, static_cast<int>(sendPiece), sendPeer, sendTag,
                             recvBytesPtr + received, static_cast<int>(recvPiece), recvPeer,
                             recvTag, until);
    if (!status.isOk())
      return fail(status);
    sent += sendPiece;
    received += recvPiece;
  } while (sent < sendBytes || received < recvBytes);
  return Status::ok();
}

Status MpiCommunicator::broadcast(void *data, size_t bytes, int root) {
  const std::string prefix = "rank " + std::to_string(worldRank()) + ": broadcast from rank " +
                             std::to_string(worldRankOf(root)) + groupSuffix() + ": ";
  if (root < 0 || root >= size())
    return Status::error(prefix + "no such rank");
  if (bytes > static_cast<size_t>(INT_MAX))
    return Status::error(prefix + std::to_string(bytes) + " bytes is too many");
  if (!failure_.empty())
    return Status::error(prefix + "the communicator failed earlier: " + failure_);
  MPI_Request request = MPI_REQUEST_NULL;
  Status status = mpiCheck(
      MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_, &request), "MPI_Ibcast");
  MPI_Status done;
  if (status.isOk())
    status = await(&request, root, deadlineFromNow(), &done);
  if (!status.isOk()) {
    cancel(&request);
    return fail(Status::error(prefix + status.message()));
  }
  return Status::ok();
}

Status MpiCommunicator::split(int color, int key, std::unique_ptr<Communicator> *out) {
  out->reset();
  // The exchange first: it waits with a deadline (MPI_Comm_split cannot), so a rank that never
  // arrives is a timeout naming it, and once it is done every rank is at the split.
  std::vector<int32_t> colorKey;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(exchangeSplitRequests(color, key, &colorKey, &sequence));
  const std::vector<int> members = splitMembers(colorKey, color);
  auto failed = [&](const Status &status) {
    return fail(Communicator::labelled("split", sequence, status));
  };
  MPI_Comm comm = MPI_COMM_NULL;
  Status status = mpiCheck(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &comm),
                           "MPI_Comm_split");
  if (!status.isOk())
    return failed(status);
  if (comm == MPI_COMM_NULL)
    return members.empty() ? Status::ok()
                           : failed(Status::error("MPI_Comm_split gave no communicator"));
  int groupRank = -1, groupSize = 0;
  status = mpiCheck(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (status.isOk())
    status = mpiCheck(MPI_Comm_rank(comm, &groupRank), "MPI_Comm_rank");
  if (status.isOk())
    status = mpiCheck(MPI_Comm_size(comm, &groupSize), "MPI_Comm_size");
  // MPI orders a group as splitMembers does (by key, then by rank); the messages rely on it.
  if (status.isOk() && (groupSize != static_cast<int>(members.size()) ||
                        members[static_cast<size_t>(groupRank)] != rank()))
    status =
        Status::error("MPI_Comm_split made rank " + std::to_string(groupRank) + " of " +
                      std::to_string(groupSize) + " where rank " +
                      std::to_string(static_cast<int>(
                          std::find(members.begin(), members.end(), rank()) - members.begin())) +
                      " of " + std::to_string(members.size()) + " was expected");
  if (!status.isOk()) {
    (void)MPI_Comm_free(&comm);
    return failed(status);
  }
  std::vector<int> worldRanks;
  for (int member : members)
    worldRanks.push_back(worldRankOf(member));
  {
    std::lock_guard<std::mutex> lock(gMpiStateMutex);
    ++gLiveCommunicators;
  }
  *out = std::make_unique<MpiCommunicator>(comm, groupRank, groupSize, tagUpperBound_,
                                           timeoutSeconds_, std::move(worldRanks));
  return Status::ok();
}

// MPI_Init_thread unless MPI is already up; counts the communicator as alive on success.
Status initialiseMpi() {
  std::lock_guard<std::mutex> lock(gMpiStateMutex);
  int finalized = 0, initialized = 0;
  SHARDC_RETURN_IF_ERROR(mpiCheck(MPI_Finalized(&finalized), "MPI_Finalized"));
  if (finalized)
    return Status::error("MPI was already finalised in this process (it cannot be started twice)");
  SHARDC_RETURN_IF_ERROR(mpiCheck(MPI_Initialized(&initialized), "MPI_Initialized"));
  if (!initialized) {
    // Serialized: a rank's collectives may come from any one thread at a time (the executor's,
    // not necessarily main's). Whatever level MPI provides is accepted: Open MPI provides it.
    int provided = 0;
    SHARDC_RETURN_IF_ERROR(mpiCheck(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread"));
    gInitialisedHere = true;
  }
  ++gLiveCommunicators;
  return Status::ok();
}

void releaseMpi() {
  std::lock_guard<std::mutex> lock(gMpiStateMutex);
  if (--gLiveCommunicators == 0 && gInitialisedHere)
    (void)MPI_Finalize();
}

} // namespace

Status createMpiCommunicator(const CommOptions &options, std::unique_ptr<Communicator> *out) {
  auto prefixed = [](const Status &status) {
    return Status::error("mpi communicator: " + status.message());
  };
  Status status = validateCommOptions(options);
  if (!status.isOk())
    return status;
  status = initialiseMpi();
  if (!status.isOk())
    return prefixed(status);
  // From here on an error returns instead of ending the job, and is reported with its string.
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 0, flag = 0;
  int *tagUpperBound = nullptr;
  status = mpiCheck(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                    "MPI_Comm_set_errhandler");
  // A private communicator: our tags cannot meet messages of anyone else using MPI.
  if (status.isOk())
    status = mpiCheck(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  if (status.isOk())
    status = mpiCheck(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (status.isOk())
    status = mpiCheck(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  if (status.isOk())
    status = mpiCheck(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (status.isOk())
    status = mpiCheck(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagUpperBound, &flag),
                      "MPI_Comm_get_attr(MPI_TAG_UB)");
  if (!status.isOk()) {
    if (comm != MPI_COMM_NULL)
      (void)MPI_Comm_free(&comm);
    releaseMpi();
    return prefixed(status);
  }
  // MPI guarantees tags up to at least 32767.
  const int tagLimit = flag && tagUpperBound ? std::max(*tagUpperBound, 32767) : 32767;
  *out = std::make_unique<MpiCommunicator>(comm, rank, size, tagLimit, options.timeoutSeconds);
  return Status::ok();
}

Status mpiBroadcastBytes(Communicator &comm, void *data, size_t bytes, int root) {
  auto *mpi = dynamic_cast<MpiCommunicator *>(&comm);
  if (mpi == nullptr)
    return Status::error(std::string("mpiBroadcastBytes needs an mpi communicator, got a ") +
                         comm.backendName() + " one");
  return mpi->broadcast(data, bytes, root);
}

} // namespace shardc::runtime
