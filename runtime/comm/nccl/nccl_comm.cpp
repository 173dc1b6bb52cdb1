// Not exercised by the unit tests on the development machine (it has no GPU); it is compiled
// and linked there so that it keeps building.
#include "runtime/comm/nccl/nccl_comm.h"

#include "runtime/comm/launcher_env.h"
#include "runtime/comm/mpi/mpi_comm.h"
#include "runtime/common/comm_cost.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shardc::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// "30", "0.5": seconds as the other backends print them.
std::string seconds(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

Status cudaCheck(cudaError_t code, const char *call) {
  if (code == cudaSuccess)
    return Status::ok();
  return Status::error(std::string(call) + " failed: " + cudaGetErrorString(code));
}

// NCCL's own words plus, when there is a communicator, its last detailed message.
Status ncclCheck(ncclResult_t code, const char *call, ncclComm_t comm = nullptr) {
  if (code == ncclSuccess || code == ncclInProgress)
    return Status::ok();
  std::string message = std::string(call) + " failed: " + ncclGetErrorString(code);
  const char *detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0')
    message += std::string(" (") + detail + ")";
  return Status::error(message);
}

// NCCL 2.18 added ncclCommSplit; before it a group's communicator is bootstrapped like a world's.
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
#define SHARDC_NCCL_HAS_SPLIT 1
#else
#define SHARDC_NCCL_HAS_SPLIT 0
#endif

// NCCL's element type for `dtype`. bf16 needs NCCL 2.10 or later.
Status ncclTypeOf(CommDType dtype, ncclDataType_t *type) {
  switch (dtype) {
  case CommDType::F32:
    *type = ncclFloat32;
    return Status::ok();
  case CommDType::BF16:
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    *type = ncclBfloat16;
    return Status::ok();
#else
    return Status::error("this NCCL has no bf16 (NCCL 2.10 or later has)");
#endif
  case CommDType::F16:
    *type = ncclFloat16;
    return Status::ok();
  case CommDType::Bytes:
    *type = ncclUint8;
    return Status::ok();
  }
  return Status::error("unknown element type " + std::to_string(static_cast<int>(dtype)));
}

// Polls a non-blocking NCCL communicator until its pending call (initialisation, a split, an
// enqueue) is done, or aborts it at the deadline (*comm becomes null) and says why.
Status waitForComm(ncclComm_t *comm, Clock::time_point deadline, double timeoutSeconds) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    SHARDC_RETURN_IF_ERROR(
        ncclCheck(ncclCommGetAsyncError(*comm, &state), "ncclCommGetAsyncError", *comm));
    if (state != ncclInProgress)
      return ncclCheck(state, "NCCL", *comm);
    if (Clock::now() > deadline) {
      (void)ncclCommAbort(*comm);
      *comm = nullptr;
      return Status::error("timed out after " + seconds(timeoutSeconds) +
                           " s waiting for NCCL (a peer rank did not join)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

class NcclCommunicator final : public Communicator {
public:
  // `mpi`: the MPI communicator of the same ranks (its world's, or its group's).
  NcclCommunicator(std::unique_ptr<Communicator> mpi, double timeoutSeconds)
      : mpi_(std::move(mpi)) {
    timeoutSeconds_ = timeoutSeconds;
    for (int r = 0; mpi_->isGroup() && r < mpi_->size(); ++r)
      worldRanks_.push_back(mpi_->worldRankOf(r));
  }
  ~NcclCommunicator() override;

  // The steps of createNcclCommunicator that need the object.
  Status start(int device) {
    Status status = startSteps(device);
    failed_ = !status.isOk();
    return status;
  }
  // A group's: takes over `comm`, which ncclCommSplit made on `device`.
  Status adopt(int device, ncclComm_t comm) {
    comm_ = comm;
    device_ = device;
    Status status = cudaCheck(cudaSetDevice(device_), "cudaSetDevice");
    if (status.isOk())
      status =
          cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    failed_ = !status.isOk();
    return status;
  }

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const char *backendName() const override { return "nccl"; }

  Status allReduceSum(void *data, size_t count, CommDType dtype) override;
  Status reduceScatterSum(const void *in, void *out, size_t chunk, CommDType dtype) override;
  Status allGather(const void *in, void *out, size_t chunk, CommDType dtype) override;
  Status allToAll(const void *in, void *out, size_t chunk, CommDType dtype) override;
  Status transfer(const void *send, size_t sendCount, int to, void *recv, size_t recvCount,
                  int from, CommDType dtype) override;
  // Posted transfers go over the MPI communicator of the same ranks: an NCCL send waits for
  // its receiver (a pair's send and receive must share a group), so a send that does not
  // wait is MPI's Isend of a host copy. Counted here as send_recv too.
  Status transferPosted(const void *send, size_t sendCount, int to, void *recv,
                        size_t recvCount, int from, CommDType dtype) override {
    const int k = static_cast<int>(CollectiveKind::SendRecv);
    counters_.calls[k] += 1;
    Status status = mpi_->transferPosted(send, sendCount, to, recv, recvCount, from, dtype);
    if (status.isOk() && to != kNoPeer)
      counters_.bytesSent[k] += sendCount * commDTypeSize(dtype);
    return status;
  }
  Status finishPosted() override { return mpi_->finishPosted(); }
  // The float32 overloads, which the overrides would otherwise hide.
  using Communicator::allGather;
  using Communicator::allToAll;
  using Communicator::allReduceSum;
  using Communicator::reduceScatterSum;
  void abort(const std::string &cause) override;
  Status split(int color, int key, std::unique_ptr<Communicator> *out) override;

private:
  // Numbers and counts a collective (*sequence: its number) and checks its element type; the
  // bytes are the ring's, from comm_cost.h.
  Status begin(CollectiveKind kind, uint64_t paddedElements, CommDType dtype, uint64_t *sequence);
  Status labelled(CollectiveKind kind, uint64_t sequence, const Status &status) const {
    return Communicator::labelled(collectiveName(kind), sequence, status);
  }
  // A device buffer of at least `bytes` bytes (grows only).
  Status deviceBuffer(size_t bytes, unsigned char **out);
  // Waits for NCCL to accept a call of the non-blocking communicator, then for the stream,
  // watching NCCL's asynchronous error; aborts the communicator at the deadline.
  Status waitForNccl(Clock::time_point deadline);
  Status finish(Clock::time_point deadline);
  // The part every collective shares: refuse after a failure (the NCCL communicator is then
  // aborted), otherwise run `work` and label its error with the rank and the collective.
  template <typename Work> Status run(CollectiveKind kind, uint64_t sequence, Work &work) {
    if (failed_ || comm_ == nullptr)
      return labelled(kind, sequence,
                      Status::error("the NCCL communicator failed earlier and was aborted"));
    Status status = work();
    failed_ = !status.isOk();
    return labelled(kind, sequence, status);
  }
  Status startSteps(int device);
  // This rank's part of starting: its GPU, its stream and (rank 0) the NCCL id.
  Status takeDevice(int device, ncclUniqueId *id);

  std::unique_ptr<Communicator> mpi_;
  int device_ = -1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  unsigned char *buffer_ = nullptr;
  size_t bufferBytes_ = 0;
  uint64_t sequence_ = 0;
  uint64_t transfers_ = 0; // this rank's transfers, for messages
  bool failed_ = false; // a collective failed: the communicator is aborted, not finalised
};

NcclCommunicator::~NcclCommunicator() {
  // Errors here have nowhere to go.
  if (comm_ != nullptr) {
    if (failed_)
      (void)ncclCommAbort(comm_);
    else
      (void)ncclCommDestroy(comm_);
  }
  if (buffer_ != nullptr)
    (void)cudaFree(buffer_);
  if (stream_ != nullptr)
    (void)cudaStreamDestroy(stream_);
}

Status NcclCommunicator::takeDevice(int device, ncclUniqueId *id) {
  int devices = 0;
  SHARDC_RETURN_IF_ERROR(cudaCheck(cudaGetDeviceCount(&devices), "cudaGetDeviceCount"));
  if (devices <= 0)
    return Status::error("no CUDA device is visible");
  if (device < 0) {
    // One GPU per rank: NCCL refuses two ranks of a communicator on one device, but only once
    // every rank has joined, with a message that does not say what to change.
    const int localRank = detectLauncher().localRank;
    if (localRank >= devices)
      return Status::error("local rank " + std::to_string(localRank) + " on this node, but " +
                           std::to_string(devices) + " CUDA device" +
                           (devices == 1 ? " is" : "s are") +
                           " visible: the nccl backend needs one GPU per rank (start at most " +
                           std::to_string(devices) + " rank" + (devices == 1 ? "" : "s") +
                           " per node)");
    device = localRank;
  }
  device_ = device;
  if (device_ >= devices)
    return Status::error("CUDA device " + std::to_string(device_) + " does not exist (" +
                         std::to_string(devices) + " visible)");
  SHARDC_RETURN_IF_ERROR(cudaCheck(cudaSetDevice(device_), "cudaSetDevice"));
  SHARDC_RETURN_IF_ERROR(
      cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  if (rank() == 0)
    SHARDC_RETURN_IF_ERROR(ncclCheck(ncclGetUniqueId(id), "ncclGetUniqueId"));
  return Status::ok();
}

Status NcclCommunicator::startSteps(int device) {
  ncclUniqueId id{};
  const Status own = takeDevice(device, &id);
  // Every rank learns whether all took their GPU before any waits for NCCL: a rank that could
  // not would otherwise leave the others waiting out the timeout (and its own MPI_Finalize
  // with them) instead of all ending at once.
  std::vector<float> failed(static_cast<size_t>(size()), 0.0f);
  failed[static_cast<size_t>(rank())] = own.isOk() ? 0.0f : 1.0f;
  SHARDC_RETURN_IF_ERROR(mpi_->allReduceSum(failed.data(), failed.size()));
  if (!own.isOk())
    return own;
  for (size_t r = 0; r < failed.size(); ++r)
    if (failed[r] != 0.0f)
      return Status::error("rank " + std::to_string(r) + " could not take its GPU (its error says why)");
  SHARDC_RETURN_IF_ERROR(mpiBroadcastBytes(*mpi_, &id, sizeof(id), 0));

  // Non-blocking, so that initialisation and every call can be waited on with a deadline.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  SHARDC_RETURN_IF_ERROR(ncclCheck(ncclCommInitRankConfig(&comm_, size(), id, rank(), &config),
                                   "ncclCommInitRankConfig"));
  return waitForNccl(deadlineFromNow());
}

Status NcclCommunicator::waitForNccl(Clock::time_point deadline) {
  return waitForComm(&comm_, deadline, timeoutSeconds_);
}

Status NcclCommunicator::finish(Clock::time_point deadline) {
  SHARDC_RETURN_IF_ERROR(waitForNccl(deadline));
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess)
      return Status::ok();
    if (state != cudaErrorNotReady)
      return cudaCheck(state, "cudaStreamQuery");
    ncclResult_t asyncError = ncclSuccess;
    SHARDC_RETURN_IF_ERROR(
        ncclCheck(ncclCommGetAsyncError(comm_, &asyncError), "ncclCommGetAsyncError", comm_));
    SHARDC_RETURN_IF_ERROR(ncclCheck(asyncError, "NCCL collective", comm_));
    if (Clock::now() > deadline) {
      // Stops the kernels that wait for the missing peer, so that the stream drains.
      (void)ncclCommAbort(comm_);
      comm_ = nullptr;
      return Status::error("timed out after " + seconds(timeoutSeconds_) +
                           " s waiting for the other ranks (NCCL does not say which)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Status NcclCommunicator::deviceBuffer(size_t bytes, unsigned char **out) {
  if (bytes > bufferBytes_) {
    if (buffer_ != nullptr)
      SHARDC_RETURN_IF_ERROR(cudaCheck(cudaFree(buffer_), "cudaFree"));
    buffer_ = nullptr;
    bufferBytes_ = 0;
    void *memory = nullptr;
    SHARDC_RETURN_IF_ERROR(cudaCheck(cudaMalloc(&memory, bytes), "cudaMalloc"));
    buffer_ = static_cast<unsigned char *>(memory);
    bufferBytes_ = bytes;
  }
  *out = buffer_;
  return Status::ok();
}

Status NcclCommunicator::begin(CollectiveKind kind, uint64_t paddedElements, CommDType dtype,
                               uint64_t *sequence) {
  const int k = static_cast<int>(kind);
  *sequence = ++sequence_;
  counters_.calls[k] += 1;
  SHARDC_RETURN_IF_ERROR(labelled(kind, *sequence, checkCommDType(kind, dtype)));
  counters_.bytesSent[k] += collectiveBytesSent(kind, paddedElements, size(), commDTypeSize(dtype));
  return Status::ok();
}

Status NcclCommunicator::split(int color, int key, std::unique_ptr<Communicator> *out) {
  out->reset();
  // The MPI communicator splits first: its exchange waits for every rank with the deadline and
  // names a missing one, and it gives the group its ranks and its bootstrap channel.
  std::unique_ptr<Communicator> mpi;
  SHARDC_RETURN_IF_ERROR(mpi_->split(color, key, &mpi));
  const uint64_t sequence = ++sequence_;
  if (failed_ || comm_ == nullptr)
    return Communicator::labelled(
        "split", sequence, Status::error("the NCCL communicator failed earlier and was aborted"));
  const auto until = deadlineFromNow();
#if SHARDC_NCCL_HAS_SPLIT
  // Every rank of this communicator takes part, those that join no group too.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t child = nullptr;
  Status status =
      ncclCheck(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, &config),
                "ncclCommSplit", comm_);
  if (status.isOk())
    status = waitForNccl(until);
  if (status.isOk() && child != nullptr)
    status = waitForComm(&child, until, timeoutSeconds_);
  if (!status.isOk()) {
    if (child != nullptr)
      (void)ncclCommAbort(child);
    failed_ = true;
    return Communicator::labelled("split", sequence, status);
  }
  if (mpi == nullptr) {
    if (child != nullptr)
      (void)ncclCommDestroy(child);
    return Status::ok();
  }
  if (child == nullptr)
    return Communicator::labelled("split", sequence,
                                  Status::error("ncclCommSplit gave no communicator"));
  auto group = std::make_unique<NcclCommunicator>(std::move(mpi), timeoutSeconds_);
  status = group->adopt(device_, child);
#else
  (void)until;
  if (mpi == nullptr)
    return Status::ok();
  // The group's own bootstrap: its rank 0's ncclUniqueId, broadcast over its MPI communicator.
  auto group = std::make_unique<NcclCommunicator>(std::move(mpi), timeoutSeconds_);
  Status status = group->start(device_);
#endif
  if (!status.isOk())
    return Communicator::labelled("split", sequence, status);
  *out = std::move(group);
  return Status::ok();
}

Status NcclCommunicator::allReduceSum(void *data, size_t count, CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::AllReduce;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, paddedToRanks(count, size()), dtype, &sequence));
  if (count == 0)
    return Status::ok();
  auto work = [&]() -> Status {
    ncclDataType_t type = ncclFloat32;
    SHARDC_RETURN_IF_ERROR(ncclTypeOf(dtype, &type));
    const auto until = deadlineFromNow();
    const size_t bytes = count * commDTypeSize(dtype);
    unsigned char *device = nullptr;
    SHARDC_RETURN_IF_ERROR(deviceBuffer(bytes, &device));
    SHARDC_RETURN_IF_ERROR(cudaCheck(
        cudaMemcpyAsync(device, data, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync"));
    SHARDC_RETURN_IF_ERROR(
        ncclCheck(ncclAllReduce(device, device, count, type, ncclSum, comm_, stream_),
                  "ncclAllReduce", comm_));
    SHARDC_RETURN_IF_ERROR(waitForNccl(until));
    SHARDC_RETURN_IF_ERROR(cudaCheck(
        cudaMemcpyAsync(data, device, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync"));
    return finish(until);
  };
  return run(kind, sequence, work);
}

Status NcclCommunicator::reduceScatterSum(const void *in, void *out, size_t chunk,
                                          CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::ReduceScatter;
  const size_t total = chunk * static_cast<size_t>(size());
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, total, dtype, &sequence));
  if (chunk == 0)
    return Status::ok();
  auto work = [&]() -> Status {
    ncclDataType_t type = ncclFloat32;
    SHARDC_RETURN_IF_ERROR(ncclTypeOf(dtype, &type));
    const auto until = deadlineFromNow();
    const size_t chunkBytes = chunk * commDTypeSize(dtype),
                 totalBytes = total * commDTypeSize(dtype);
    unsigned char *device = nullptr;
    SHARDC_RETURN_IF_ERROR(deviceBuffer(totalBytes + chunkBytes, &device));
    SHARDC_RETURN_IF_ERROR(
        cudaCheck(cudaMemcpyAsync(device, in, totalBytes, cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync"));
    SHARDC_RETURN_IF_ERROR(ncclCheck(
        ncclReduceScatter(device, device + totalBytes, chunk, type, ncclSum, comm_, stream_),
        "ncclReduceScatter", comm_));
    SHARDC_RETURN_IF_ERROR(waitForNccl(until));
    SHARDC_RETURN_IF_ERROR(cudaCheck(
        cudaMemcpyAsync(out, device + totalBytes, chunkBytes, cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync"));
    return finish(until);
  };
  return run(kind, sequence, work);
}

Status NcclCommunicator::allGather(const void *in, void *out, size_t chunk, CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::AllGather;
  const size_t total = chunk * static_cast<size_t>(size());
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, total, dtype, &sequence));
  if (chunk == 0)
    return Status::ok();
  auto work = [&]() -> Status {
    ncclDataType_t type = ncclFloat32;
    SHARDC_RETURN_IF_ERROR(ncclTypeOf(dtype, &type));
    const auto until = deadlineFromNow();
    const size_t chunkBytes = chunk * commDTypeSize(dtype),
                 totalBytes = total * commDTypeSize(dtype);
    unsigned char *device = nullptr;
    SHARDC_RETURN_IF_ERROR(deviceBuffer(totalBytes, &device));
    // In place: this rank's shard already sits at its slot of the gathered buffer.
    unsigned char *own = device + static_cast<size_t>(rank()) * chunkBytes;
    SHARDC_RETURN_IF_ERROR(cudaCheck(
        cudaMemcpyAsync(own, in, chunkBytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync"));
    SHARDC_RETURN_IF_ERROR(
        ncclCheck(ncclAllGather(own, device, chunk, type, comm_, stream_), "ncclAllGather", comm_));
    SHARDC_RETURN_IF_ERROR(waitForNccl(until));
    SHARDC_RETURN_IF_ERROR(
        cudaCheck(cudaMemcpyAsync(out, device, totalBytes, cudaMemcpyDeviceToHost, stream_),
                  "cudaMemcpyAsync"));
    return finish(until);
  };
  return run(kind, sequence, work);
}

// NCCL has no all-to-all call: one grouped send and receive per peer (NCCL 2.7 and later),
// which NCCL runs as one operation.
Status NcclCommunicator::allToAll(const void *in, void *out, size_t chunk, CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::AllToAll;
  const size_t total = chunk * static_cast<size_t>(size());
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, total, dtype, &sequence));
  if (chunk == 0)
    return Status::ok();
  auto work = [&]() -> Status {
    ncclDataType_t type = ncclFloat32;
    SHARDC_RETURN_IF_ERROR(ncclTypeOf(dtype, &type));
    const auto until = deadlineFromNow();
    const size_t chunkBytes = chunk * commDTypeSize(dtype),
                 totalBytes = total * commDTypeSize(dtype);
    unsigned char *device = nullptr;
    SHARDC_RETURN_IF_ERROR(deviceBuffer(2 * totalBytes, &device));
    unsigned char *received = device + totalBytes;
    SHARDC_RETURN_IF_ERROR(
        cudaCheck(cudaMemcpyAsync(device, in, totalBytes, cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync"));
    SHARDC_RETURN_IF_ERROR(ncclCheck(ncclGroupStart(), "ncclGroupStart", comm_));
    // The group is ended whatever a send or receive said, so that it is never left open.
    Status queued = Status::ok();
    for (int peer = 0; peer < size() && queued.isOk(); ++peer) {
      const size_t at = static_cast<size_t>(peer) * chunkBytes;
      queued = ncclCheck(ncclSend(device + at, chunk, type, peer, comm_, stream_), "ncclSend",
                         comm_);
      if (queued.isOk())
        queued = ncclCheck(ncclRecv(received + at, chunk, type, peer, comm_, stream_),
                           "ncclRecv", comm_);
    }
    Status ended = ncclCheck(ncclGroupEnd(), "ncclGroupEnd", comm_);
    SHARDC_RETURN_IF_ERROR(queued);
    SHARDC_RETURN_IF_ERROR(ended);
    SHARDC_RETURN_IF_ERROR(waitForNccl(until));
    SHARDC_RETURN_IF_ERROR(
        cudaCheck(cudaMemcpyAsync(out, received, totalBytes, cudaMemcpyDeviceToHost, stream_),
                  "cudaMemcpyAsync"));
    return finish(until);
  };
  return run(kind, sequence, work);
}

// ncclSend and ncclRecv in one group, so that two stages sending to each other cannot
// deadlock; NCCL matches a pair's sends and receives in call order, as the interface says.
Status NcclCommunicator::transfer(const void *send, size_t sendCount, int to, void *recv,
                                  size_t recvCount, int from, CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::SendRecv;
  const int k = static_cast<int>(kind);
  const uint64_t number = ++transfers_;
  counters_.calls[k] += 1;
  SHARDC_RETURN_IF_ERROR(labelled(kind, number,
                                  checkTransfer(rank(), size(), send, sendCount, to, recv,
                                                recvCount, from, dtype)));
  auto work = [&]() -> Status {
    ncclDataType_t type = ncclFloat32;
    SHARDC_RETURN_IF_ERROR(ncclTypeOf(dtype, &type));
    const auto until = deadlineFromNow();
    const size_t sendBytes = sendCount * commDTypeSize(dtype),
                 recvBytes = recvCount * commDTypeSize(dtype);
    unsigned char *device = nullptr;
    SHARDC_RETURN_IF_ERROR(deviceBuffer(sendBytes + recvBytes, &device));
    unsigned char *received = device + sendBytes;
    if (sendBytes > 0)
      SHARDC_RETURN_IF_ERROR(
          cudaCheck(cudaMemcpyAsync(device, send, sendBytes, cudaMemcpyHostToDevice, stream_),
                    "cudaMemcpyAsync"));
    SHARDC_RETURN_IF_ERROR(ncclCheck(ncclGroupStart(), "ncclGroupStart", comm_));
    // The group is ended whatever a send or receive said, so that it is never left open.
    Status queued = Status::ok();
    if (to != kNoPeer)
      queued = ncclCheck(ncclSend(device, sendCount, type, to, comm_, stream_), "ncclSend", comm_);
    if (queued.isOk() && from != kNoPeer)
      queued = ncclCheck(ncclRecv(received, recvCount, type, from, comm_, stream_), "ncclRecv",
                         comm_);
    Status ended = ncclCheck(ncclGroupEnd(), "ncclGroupEnd", comm_);
    SHARDC_RETURN_IF_ERROR(queued);
    SHARDC_RETURN_IF_ERROR(ended);
    SHARDC_RETURN_IF_ERROR(waitForNccl(until));
    if (recvBytes > 0)
      SHARDC_RETURN_IF_ERROR(
          cudaCheck(cudaMemcpyAsync(recv, received, recvBytes, cudaMemcpyDeviceToHost, stream_),
                    "cudaMemcpyAsync"));
    SHARDC_RETURN_IF_ERROR(finish(until));
    counters_.bytesSent[k] += sendBytes;
    return Status::ok();
  };
  return run(kind, number, work);
}

void NcclCommunicator::abort(const std::string &cause) {
  if (comm_ != nullptr) {
    (void)ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  failed_ = true;
  mpi_->abort(cause); // MPI_Abort: ends every rank
}

} // namespace

Status createNcclCommunicator(const CommOptions &options, int device,
                              std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> mpi;
  SHARDC_RETURN_IF_ERROR(createMpiCommunicator(options, &mpi));
  const int rank = mpi->rank();
  auto nccl = std::make_unique<NcclCommunicator>(std::move(mpi), options.timeoutSeconds);
  Status status = nccl->start(device);
  if (!status.isOk())
    return Status::error("nccl communicator: rank " + std::to_string(rank) + ": " +
                         status.message());
  *out = std::move(nccl);
  return Status::ok();
}

} // namespace shardc::runtime
