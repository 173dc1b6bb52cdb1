#include "runtime/comm/ring.h"

// The 16-bit conversions the cast kernels use too (the same roundings as PyTorch).
#include "runtime/support/half_float.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace shardc::runtime {

namespace {

// Index of chunk (r - back) on a ring of `size` ranks, for 0 <= back <= size.
int ringChunk(int rank, int back, int size) { return ((rank - back) % size + size) % size; }

// The partial sum a rank receives, plus its own data, n elements of `dtype`: the one place the
// ring adds, so the all-reduce and the reduce-scatter round every element the same way (the
// operand order is fixed too, which decides which NaN payload survives). `dst` may be
// `partial` or `own`.
void addOwn(CommDType dtype, void *dst, const void *partial, const void *own, size_t n) {
  switch (dtype) {
  case CommDType::F32: {
    float *d = static_cast<float *>(dst);
    const float *p = static_cast<const float *>(partial), *o = static_cast<const float *>(own);
    for (size_t i = 0; i < n; ++i)
      d[i] = p[i] + o[i];
    return;
  }
  case CommDType::BF16: {
    uint16_t *d = static_cast<uint16_t *>(dst);
    const uint16_t *p = static_cast<const uint16_t *>(partial);
    const uint16_t *o = static_cast<const uint16_t *>(own);
    for (size_t i = 0; i < n; ++i)
      d[i] = toBFloat16(toFloat(BFloat16{p[i]}) + toFloat(BFloat16{o[i]})).bits;
    return;
  }
  case CommDType::F16: {
    uint16_t *d = static_cast<uint16_t *>(dst);
    const uint16_t *p = static_cast<const uint16_t *>(partial);
    const uint16_t *o = static_cast<const uint16_t *>(own);
    for (size_t i = 0; i < n; ++i)
      d[i] = toFloat16(toFloat(Float16{p[i]}) + toFloat(Float16{o[i]})).bits;
    return;
  }
  case CommDType::Bytes: // refused before the ring starts (checkCommDType)
    return;
  }
}

bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  const auto a0 = reinterpret_cast<uintptr_t>(a), b0 = reinterpret_cast<uintptr_t>(b);
  return a0 < b0 + bBytes && b0 < a0 + aBytes;
}

unsigned char *bytesOf(void *p) { return static_cast<unsigned char *>(p); }
const unsigned char *bytesOf(const void *p) { return static_cast<const unsigned char *>(p); }

} // namespace

std::string describeMessageSequence(uint64_t sequence) {
  if (sequence & kTransferSequenceBit)
    return "transfer #" + std::to_string(sequence & ~kTransferSequenceBit);
  return "collective #" + std::to_string(sequence);
}

size_t ringChunkBegin(size_t count, int size, int chunk) {
  // count * chunk cannot overflow: RingCommunicator limits count to SIZE_MAX / elementSize / size.
  return count * static_cast<size_t>(chunk) / static_cast<size_t>(size);
}

Status ringAllReduceSum(Transport &transport, int rank, int size, void *data, size_t count,
                        CommDType dtype, void *scratch, uint64_t sequence, uint64_t *bytesSent) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  const size_t elementBytes = commDTypeSize(dtype);
  unsigned char *bytes = bytesOf(data);
  auto begin = [&](int chunk) { return ringChunkBegin(count, size, chunk); };
  auto length = [&](int chunk) { return begin(chunk + 1) - begin(chunk); };
  auto at = [&](int chunk) { return bytes + begin(chunk) * elementBytes; };
  for (int step = 0; step + 1 < size; ++step) {
    const int sendChunk = ringChunk(rank, step + 1, size);
    const int recvChunk = ringChunk(rank, step + 2, size);
    const size_t sendBytes = length(sendChunk) * elementBytes;
    SHARDC_RETURN_IF_ERROR(transport.sendRecv(at(sendChunk), sendBytes, next, scratch,
                                              length(recvChunk) * elementBytes, prev, sequence));
    *bytesSent += sendBytes;
    addOwn(dtype, at(recvChunk), scratch, at(recvChunk), length(recvChunk));
  }
  for (int step = 0; step + 1 < size; ++step) {
    const int sendChunk = ringChunk(rank, step, size);
    const int recvChunk = ringChunk(rank, step + 1, size);
    const size_t sendBytes = length(sendChunk) * elementBytes;
    SHARDC_RETURN_IF_ERROR(transport.sendRecv(at(sendChunk), sendBytes, next, at(recvChunk),
                                              length(recvChunk) * elementBytes, prev, sequence));
    *bytesSent += sendBytes;
  }
  return Status::ok();
}

Status ringReduceScatterSum(Transport &transport, int rank, int size, const void *in, void *out,
                            size_t chunk, CommDType dtype, void *scratch, uint64_t sequence,
                            uint64_t *bytesSent) {
  const size_t bytes = chunk * commDTypeSize(dtype);
  if (size == 1) {
    std::memcpy(out, in, bytes);
    return Status::ok();
  }
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  auto inChunk = [&](int c) { return bytesOf(in) + static_cast<size_t>(c) * bytes; };
  // `in` is read-only, so partial sums travel through two buffers, received into alternately;
  // the parity is chosen so that the last step receives into `out`.
  const void *sending = inChunk(ringChunk(rank, 1, size));
  for (int step = 0; step + 1 < size; ++step) {
    void *receiving = (size - 2 - step) % 2 == 0 ? out : scratch;
    const int recvChunk = ringChunk(rank, step + 2, size);
    SHARDC_RETURN_IF_ERROR(
        transport.sendRecv(sending, bytes, next, receiving, bytes, prev, sequence));
    *bytesSent += bytes;
    addOwn(dtype, receiving, receiving, inChunk(recvChunk), chunk);
    sending = receiving;
  }
  return Status::ok();
}

Status ringAllGather(Transport &transport, int rank, int size, const void *in, void *out,
                     size_t chunk, CommDType dtype, uint64_t sequence, uint64_t *bytesSent) {
  const size_t bytes = chunk * commDTypeSize(dtype);
  unsigned char *gathered = bytesOf(out);
  std::memcpy(gathered + static_cast<size_t>(rank) * bytes, in, bytes);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int step = 0; step + 1 < size; ++step) {
    const size_t sendChunk = static_cast<size_t>(ringChunk(rank, step, size));
    const size_t recvChunk = static_cast<size_t>(ringChunk(rank, step + 1, size));
    SHARDC_RETURN_IF_ERROR(transport.sendRecv(gathered + sendChunk * bytes, bytes, next,
                                              gathered + recvChunk * bytes, bytes, prev, sequence));
    *bytesSent += bytes;
  }
  return Status::ok();
}

Status pairwiseAllToAll(Transport &transport, int rank, int size, const void *in, void *out,
                        size_t chunk, CommDType dtype, uint64_t sequence, uint64_t *bytesSent) {
  const size_t bytes = chunk * commDTypeSize(dtype);
  auto inChunk = [&](int c) { return bytesOf(in) + static_cast<size_t>(c) * bytes; };
  auto outChunk = [&](int c) { return bytesOf(out) + static_cast<size_t>(c) * bytes; };
  std::memcpy(outChunk(rank), inChunk(rank), bytes);
  // At step s every rank sends s places ahead and receives from s places behind: the pairs of
  // one step form cycles, so each sendRecv is matched by its peer's in the same step.
  for (int step = 1; step < size; ++step) {
    const int to = (rank + step) % size, from = (rank + size - step) % size;
    SHARDC_RETURN_IF_ERROR(
        transport.sendRecv(inChunk(to), bytes, to, outChunk(from), bytes, from, sequence));
    *bytesSent += bytes;
  }
  return Status::ok();
}

// ---- RingCommunicator --------------------------------------------------------------------------

Status RingCommunicator::begin(CollectiveKind kind, size_t elements, CommDType dtype,
                               uint64_t *sequence) {
  *sequence = ++sequence_;
  counters_.calls[static_cast<int>(kind)] += 1;
  SHARDC_RETURN_IF_ERROR(labelled(kind, *sequence, checkCommDType(kind, dtype)));
  // Keeps every byte count and chunk boundary (count * chunk index) within size_t.
  const size_t limit = std::numeric_limits<size_t>::max() / commDTypeSize(dtype) /
                       static_cast<size_t>(size_ > 0 ? size_ : 1);
  if (elements > limit)
    return labelled(kind, *sequence,
                    Status::error(std::to_string(elements) + " elements is too many"));
  return Status::ok();
}

Status RingCommunicator::exchangeSplitRequests(int color, int key, std::vector<int32_t> *colorKey,
                                               uint64_t *sequence) {
  *sequence = ++sequence_;
  const int32_t mine[2] = {static_cast<int32_t>(color), static_cast<int32_t>(key)};
  colorKey->assign(2 * static_cast<size_t>(size_), 0);
  uint64_t uncounted = 0;
  Status status = ringAllGather(transport(), rank_, size_, mine, colorKey->data(), sizeof mine,
                                CommDType::Bytes, *sequence, &uncounted);
  if (!status.isOk())
    return Communicator::labelled("split", *sequence, status);
  return Status::ok();
}

void *RingCommunicator::scratch(size_t bytes) {
  if (scratch_.size() < bytes)
    scratch_.resize(bytes);
  return scratch_.data();
}

Status RingCommunicator::allReduceSum(void *data, size_t count, CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::AllReduce;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, count, dtype, &sequence));
  if (count == 0 || size_ == 1)
    return Status::ok();
  if (data == nullptr)
    return labelled(kind, sequence, Status::error("null buffer"));
  // The largest chunk: ceil(count / size).
  const size_t largest = ringChunkBegin(count, size_, 1) + 1;
  return labelled(kind, sequence,
                  ringAllReduceSum(transport(), rank_, size_, data, count, dtype,
                                   scratch(largest * commDTypeSize(dtype)), sequence,
                                   &counters_.bytesSent[static_cast<int>(kind)]));
}

Status RingCommunicator::reduceScatterSum(const void *in, void *out, size_t chunk,
                                          CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::ReduceScatter;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, chunk, dtype, &sequence));
  if (chunk == 0)
    return Status::ok();
  const size_t chunkBytes = chunk * commDTypeSize(dtype);
  if (in == nullptr || out == nullptr)
    return labelled(kind, sequence, Status::error("null buffer"));
  if (overlaps(in, chunkBytes * static_cast<size_t>(size_), out, chunkBytes))
    return labelled(kind, sequence, Status::error("the input and output buffers overlap"));
  return labelled(kind, sequence,
                  ringReduceScatterSum(transport(), rank_, size_, in, out, chunk, dtype,
                                       scratch(chunkBytes), sequence,
                                       &counters_.bytesSent[static_cast<int>(kind)]));
}

Status RingCommunicator::allGather(const void *in, void *out, size_t chunk, CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::AllGather;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, chunk, dtype, &sequence));
  if (chunk == 0)
    return Status::ok();
  const size_t chunkBytes = chunk * commDTypeSize(dtype);
  if (in == nullptr || out == nullptr)
    return labelled(kind, sequence, Status::error("null buffer"));
  if (overlaps(in, chunkBytes, out, chunkBytes * static_cast<size_t>(size_)))
    return labelled(kind, sequence, Status::error("the input and output buffers overlap"));
  return labelled(kind, sequence,
                  ringAllGather(transport(), rank_, size_, in, out, chunk, dtype, sequence,
                                &counters_.bytesSent[static_cast<int>(kind)]));
}

Status RingCommunicator::allToAll(const void *in, void *out, size_t chunk, CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::AllToAll;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, chunk, dtype, &sequence));
  if (chunk == 0)
    return Status::ok();
  const size_t totalBytes = chunk * commDTypeSize(dtype) * static_cast<size_t>(size_);
  if (in == nullptr || out == nullptr)
    return labelled(kind, sequence, Status::error("null buffer"));
  if (overlaps(in, totalBytes, out, totalBytes))
    return labelled(kind, sequence, Status::error("the input and output buffers overlap"));
  return labelled(kind, sequence,
                  pairwiseAllToAll(transport(), rank_, size_, in, out, chunk, dtype, sequence,
                                   &counters_.bytesSent[static_cast<int>(kind)]));
}

Status RingCommunicator::transfer(const void *send, size_t sendCount, int to, void *recv,
                                  size_t recvCount, int from, CommDType dtype) {
  return pointToPoint(false, send, sendCount, to, recv, recvCount, from, dtype);
}

Status RingCommunicator::transferPosted(const void *send, size_t sendCount, int to, void *recv,
                                        size_t recvCount, int from, CommDType dtype) {
  return pointToPoint(true, send, sendCount, to, recv, recvCount, from, dtype);
}

Status RingCommunicator::finishPosted() {
  Status status = transport().finishPostedSends();
  if (status.isOk())
    return status;
  return Status::error("rank " + std::to_string(worldRank()) + ": posted transfers" +
                       groupSuffix() + ": " + status.message());
}

Status RingCommunicator::pointToPoint(bool posted, const void *send, size_t sendCount, int to,
                                      void *recv, size_t recvCount, int from, CommDType dtype) {
  const CollectiveKind kind = CollectiveKind::SendRecv;
  const uint64_t number = ++transfers_;
  counters_.calls[static_cast<int>(kind)] += 1;
  SHARDC_RETURN_IF_ERROR(labelled(
      kind, number,
      checkTransfer(rank_, size_, send, sendCount, to, recv, recvCount, from, dtype)));
  const uint64_t sendSequence =
      to == kNoPeer ? 0 : kTransferSequenceBit | ++sentTo_[static_cast<size_t>(to)];
  const uint64_t recvSequence =
      from == kNoPeer ? 0 : kTransferSequenceBit | ++receivedFrom_[static_cast<size_t>(from)];
  const size_t elementBytes = commDTypeSize(dtype);
  Status status = Status::ok();
  if (!posted) {
    status = transport().peerSendRecv(send, sendCount * elementBytes, to, sendSequence, recv,
                                      recvCount * elementBytes, from, recvSequence);
  } else {
    if (to != kNoPeer)
      status = transport().postSend(send, sendCount * elementBytes, to, sendSequence);
    if (status.isOk() && from != kNoPeer)
      status = transport().peerSendRecv(nullptr, 0, kNoPeer, 0, recv, recvCount * elementBytes,
                                        from, recvSequence);
  }
  if (status.isOk())
    counters_.bytesSent[static_cast<int>(kind)] += sendCount * elementBytes;
  return labelled(kind, number, status);
}

} // namespace shardc::runtime
