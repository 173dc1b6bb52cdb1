#include "runtime/comm/ring.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace shardc::runtime {

namespace {

// Index of chunk (r - back) on a ring of `size` ranks, for 0 <= back <= size.
int ringChunk(int rank, int back, int size) { return ((rank - back) % size + size) % size; }

// The partial sum a rank receives, plus its own data: the one place the ring adds, so the
// all-reduce and the reduce-scatter round every element the same way (the operand order is
// fixed too, which decides which NaN payload survives).
void addOwn(float *dst, const float *partial, const float *own, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = partial[i] + own[i];
}

bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  const auto a0 = reinterpret_cast<uintptr_t>(a), b0 = reinterpret_cast<uintptr_t>(b);
  return a0 < b0 + bBytes && b0 < a0 + aBytes;
}

} // namespace

size_t ringChunkBegin(size_t count, int size, int chunk) {
  // count * chunk cannot overflow: RingCommunicator limits count to SIZE_MAX / 4 / size.
  return count * static_cast<size_t>(chunk) / static_cast<size_t>(size);
}

Status ringAllReduceSum(Transport &transport, int rank, int size, float *data, size_t count,
                        float *scratch, uint64_t sequence, uint64_t *bytesSent) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  auto begin = [&](int chunk) { return ringChunkBegin(count, size, chunk); };
  auto length = [&](int chunk) { return begin(chunk + 1) - begin(chunk); };
  for (int step = 0; step + 1 < size; ++step) {
    const int sendChunk = ringChunk(rank, step + 1, size);
    const int recvChunk = ringChunk(rank, step + 2, size);
    const size_t sendBytes = length(sendChunk) * sizeof(float);
    SHARDC_RETURN_IF_ERROR(transport.sendRecv(data + begin(sendChunk), sendBytes, next, scratch,
                                              length(recvChunk) * sizeof(float), prev, sequence));
    *bytesSent += sendBytes;
    float *own = data + begin(recvChunk);
    addOwn(own, scratch, own, length(recvChunk));
  }
  for (int step = 0; step + 1 < size; ++step) {
    const int sendChunk = ringChunk(rank, step, size);
    const int recvChunk = ringChunk(rank, step + 1, size);
    const size_t sendBytes = length(sendChunk) * sizeof(float);
    SHARDC_RETURN_IF_ERROR(transport.sendRecv(data + begin(sendChunk), sendBytes, next,
                                              data + begin(recvChunk),
                                              length(recvChunk) * sizeof(float), prev, sequence));
    *bytesSent += sendBytes;
  }
  return Status::ok();
}

Status ringReduceScatterSum(Transport &transport, int rank, int size, const float *in, float *out,
                            size_t chunk, float *scratch, uint64_t sequence, uint64_t *bytesSent) {
  if (size == 1) {
    std::memcpy(out, in, chunk * sizeof(float));
    return Status::ok();
  }
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  const size_t bytes = chunk * sizeof(float);
  // `in` is read-only, so partial sums travel through two buffers, received into alternately;
  // the parity is chosen so that the last step receives into `out`.
  const float *sending = in + static_cast<size_t>(ringChunk(rank, 1, size)) * chunk;
  for (int step = 0; step + 1 < size; ++step) {
    float *receiving = (size - 2 - step) % 2 == 0 ? out : scratch;
    const int recvChunk = ringChunk(rank, step + 2, size);
    SHARDC_RETURN_IF_ERROR(
        transport.sendRecv(sending, bytes, next, receiving, bytes, prev, sequence));
    *bytesSent += bytes;
    addOwn(receiving, receiving, in + static_cast<size_t>(recvChunk) * chunk, chunk);
    sending = receiving;
  }
  return Status::ok();
}

Status ringAllGather(Transport &transport, int rank, int size, const float *in, float *out,
                     size_t chunk, uint64_t sequence, uint64_t *bytesSent) {
  std::memcpy(out + static_cast<size_t>(rank) * chunk, in, chunk * sizeof(float));
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  const size_t bytes = chunk * sizeof(float);
  for (int step = 0; step + 1 < size; ++step) {
    const size_t sendChunk = static_cast<size_t>(ringChunk(rank, step, size));
    const size_t recvChunk = static_cast<size_t>(ringChunk(rank, step + 1, size));
    SHARDC_RETURN_IF_ERROR(transport.sendRecv(out + sendChunk * chunk, bytes, next,
                                              out + recvChunk * chunk, bytes, prev, sequence));
    *bytesSent += bytes;
  }
  return Status::ok();
}

// ---- RingCommunicator --------------------------------------------------------------------------

Status RingCommunicator::begin(CollectiveKind kind, size_t elements, uint64_t *sequence) {
  *sequence = ++sequence_;
  counters_.calls[static_cast<int>(kind)] += 1;
  // Keeps every byte count and chunk boundary (count * chunk index) within size_t.
  const size_t limit = std::numeric_limits<size_t>::max() / sizeof(float) /
                       static_cast<size_t>(size_ > 0 ? size_ : 1);
  if (elements > limit)
    return labelled(kind, *sequence,
                    Status::error(std::to_string(elements) + " elements is too many"));
  return Status::ok();
}

Status RingCommunicator::exchangeSplitRequests(int color, int key, std::vector<int32_t> *colorKey,
                                               uint64_t *sequence) {
  *sequence = ++sequence_;
  // The ring moves floats but only copies them (an all-gather adds nothing), so the ints travel
  // as their bit patterns.
  const int32_t mine[2] = {static_cast<int32_t>(color), static_cast<int32_t>(key)};
  float in[2];
  std::memcpy(in, mine, sizeof in);
  std::vector<float> out(2 * static_cast<size_t>(size_));
  uint64_t uncounted = 0;
  Status status =
      ringAllGather(transport(), rank_, size_, in, out.data(), 2, *sequence, &uncounted);
  if (!status.isOk())
    return Communicator::labelled("split", *sequence, status);
  colorKey->resize(out.size());
  std::memcpy(colorKey->data(), out.data(), out.size() * sizeof(float));
  return Status::ok();
}

float *RingCommunicator::scratch(size_t elements) {
  if (scratch_.size() < elements)
    scratch_.resize(elements);
  return scratch_.data();
}

Status RingCommunicator::allReduceSum(float *data, size_t count) {
  const CollectiveKind kind = CollectiveKind::AllReduce;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, count, &sequence));
  if (count == 0 || size_ == 1)
    return Status::ok();
  if (data == nullptr)
    return labelled(kind, sequence, Status::error("null buffer"));
  // The largest chunk: ceil(count / size).
  const size_t largest = ringChunkBegin(count, size_, 1) + 1;
  return labelled(kind, sequence,
                  ringAllReduceSum(transport(), rank_, size_, data, count, scratch(largest),
                                   sequence, &counters_.bytesSent[static_cast<int>(kind)]));
}

Status RingCommunicator::reduceScatterSum(const float *in, float *out, size_t chunk) {
  const CollectiveKind kind = CollectiveKind::ReduceScatter;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, chunk, &sequence));
  if (chunk == 0)
    return Status::ok();
  const size_t chunkBytes = chunk * sizeof(float);
  if (in == nullptr || out == nullptr)
    return labelled(kind, sequence, Status::error("null buffer"));
  if (overlaps(in, chunkBytes * static_cast<size_t>(size_), out, chunkBytes))
    return labelled(kind, sequence, Status::error("the input and output buffers overlap"));
  return labelled(kind, sequence,
                  ringReduceScatterSum(transport(), rank_, size_, in, out, chunk, scratch(chunk),
                                       sequence, &counters_.bytesSent[static_cast<int>(kind)]));
}

Status RingCommunicator::allGather(const float *in, float *out, size_t chunk) {
  const CollectiveKind kind = CollectiveKind::AllGather;
  uint64_t sequence = 0;
  SHARDC_RETURN_IF_ERROR(begin(kind, chunk, &sequence));
  if (chunk == 0)
    return Status::ok();
  const size_t chunkBytes = chunk * sizeof(float);
  if (in == nullptr || out == nullptr)
    return labelled(kind, sequence, Status::error("null buffer"));
  if (overlaps(in, chunkBytes, out, chunkBytes * static_cast<size_t>(size_)))
    return labelled(kind, sequence, Status::error("the input and output buffers overlap"));
  return labelled(kind, sequence,
                  ringAllGather(transport(), rank_, size_, in, out, chunk, sequence,
                                &counters_.bytesSent[static_cast<int>(kind)]));
}

} // namespace shardc::runtime
