// The ring algorithm behind the local and mpi backends: one implementation over an abstract
// point-to-point Transport, so that both backends reduce every element in the same order and
// give bit-identical results, and send exactly the bytes runtime/common/comm_cost.h predicts.
//
// The N ranks form a ring: rank r sends to r+1 and receives from r-1 (mod N). A buffer of
// `count` elements of one CommDType is cut into N chunks, chunk c = [c*count/N, (c+1)*count/N)
// (equal chunks when count is a multiple of N, which the kernels guarantee by padding).
//
//   reduce-scatter  N-1 steps; at step s rank r sends its partial sum of chunk (r-s-1) and adds
//                   the partial of chunk (r-s-2) it receives to its own data. Rank r ends with
//                   chunk r fully reduced, summed left to right in ring order starting after it:
//                     chunk c = ((x[c+1] + x[c+2]) + ...) + x[c]          (ranks mod N)
//                   whatever the timing, so every run and both backends agree bit for bit.
//                   Each + is one rounding: f32 adds as f32; bf16 and f16 widen both operands to
//                   f32, add, and round the sum back to their type (nearest, ties to even), so
//                   a partial sum travels as a 16-bit value, as with NCCL's bf16 reductions.
//   all-gather      N-1 steps; at step s rank r forwards chunk (r-s), receives chunk (r-s-1).
//                   It only copies, so it moves any element type, raw bytes included.
//   all-reduce      reduce-scatter then all-gather in place: every rank ends with the same bits.
//   all-to-all      not a ring: N-1 pairwise exchanges; at step s rank r sends its chunk (r+s)
//                   to rank r+s and receives rank (r-s)'s chunk r from it. It only copies.
//
// Each step sends one chunk, so a rank sends (N-1) chunks per reduce-scatter, all-gather or
// all-to-all and 2(N-1) per all-reduce: collectiveBytesSent() of comm_cost.h, with the element's size.
#pragma once

#include "runtime/comm/communicator.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

// How one rank exchanges bytes with its ring neighbours (mailboxes between threads, MPI
// point-to-point messages).
class Transport {
public:
  virtual ~Transport() = default;

  // Sends send[0, sendBytes) to rank `to` while receiving exactly recvBytes from rank `from`
  // into recv, and returns once both are done. Both happen at once, so that a ring in which
  // every rank sends before it receives cannot deadlock. `sequence` numbers the collective
  // (1, 2, ... in call order, the same on every rank): a message from another collective, or of
  // another size, is an error rather than data. Waits at most the backend's timeout. A failure
  // message says only what went wrong ("timed out after 30 s waiting for rank 3", "rank 2
  // failed: cause"); the ring prefixes the rank and the collective. `send` stays untouched and
  // may be read until the call returns, even when it fails.
  Status sendRecv(const void *send, size_t sendBytes, int to, void *recv, size_t recvBytes,
                  int from, uint64_t sequence) {
    return peerSendRecv(send, sendBytes, to, sequence, recv, recvBytes, from, sequence);
  }
  // The same with the two halves numbered apart (a point-to-point transfer: each ordered pair
  // of ranks numbers its own messages), and either peer Communicator::kNoPeer to skip that
  // half. The message to `to` carries sendSequence; the one from `from` must carry
  // recvSequence.
  virtual Status peerSendRecv(const void *send, size_t sendBytes, int to, uint64_t sendSequence,
                              void *recv, size_t recvBytes, int from, uint64_t recvSequence) = 0;
  // Posts send[0, sendBytes) to `to` as message `sequence` and returns without waiting for
  // the receiver: the bytes are copied first (or handed to a request that owns a copy), so
  // `send` may change at once. The receiver takes it with peerSendRecv, in order with the
  // pair's other messages.
  virtual Status postSend(const void *send, size_t sendBytes, int to, uint64_t sequence) = 0;
  // Waits until every message this rank posted has been taken (at most the backend's
  // timeout), then forgets them.
  virtual Status finishPostedSends() = 0;
};

// The numbers of point-to-point messages have this bit set, so that one is never taken for a
// collective's (whose numbers count from 1) and the other way round.
inline constexpr uint64_t kTransferSequenceBit = uint64_t(1) << 62;
// "collective #S" or "transfer #K" (K: the pair's message count), for mismatch messages.
std::string describeMessageSequence(uint64_t sequence);

// Start of chunk `chunk` (0..size) of a `count`-element buffer split over `size` ranks.
size_t ringChunkBegin(size_t count, int size, int chunk);

// The ring collectives (and the pairwise all-to-all) of rank `rank` of `size`, on elements of `dtype` (counts and
// chunks in elements); each adds the payload bytes it hands to the transport to *bytesSent.
// They check nothing about their arguments (RingCommunicator does; a reduction of Bytes is
// its error). `scratch` holds at least one chunk (the largest, for all-reduce).
Status ringAllReduceSum(Transport &transport, int rank, int size, void *data, size_t count,
                        CommDType dtype, void *scratch, uint64_t sequence, uint64_t *bytesSent);
Status ringReduceScatterSum(Transport &transport, int rank, int size, const void *in, void *out,
                            size_t chunk, CommDType dtype, void *scratch, uint64_t sequence,
                            uint64_t *bytesSent);
Status ringAllGather(Transport &transport, int rank, int size, const void *in, void *out,
                     size_t chunk, CommDType dtype, uint64_t sequence, uint64_t *bytesSent);
Status pairwiseAllToAll(Transport &transport, int rank, int size, const void *in, void *out,
                        size_t chunk, CommDType dtype, uint64_t sequence, uint64_t *bytesSent);

// A Communicator whose collectives are the ring over the Transport a backend provides. It
// validates the arguments, numbers the collectives, counts calls and bytes in counters_, and
// turns a transport failure into "rank R: all_reduce #S: <cause>".
class RingCommunicator : public Communicator {
public:
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // `count` need not be a multiple of size() (the chunks are then uneven, and the bytes sent
  // differ from collectiveBytesSent, which assumes the padded size).
  Status allReduceSum(void *data, size_t count, CommDType dtype) override;
  Status reduceScatterSum(const void *in, void *out, size_t chunk, CommDType dtype) override;
  Status allGather(const void *in, void *out, size_t chunk, CommDType dtype) override;
  Status allToAll(const void *in, void *out, size_t chunk, CommDType dtype) override;
  Status transfer(const void *send, size_t sendCount, int to, void *recv, size_t recvCount,
                  int from, CommDType dtype) override;
  Status transferPosted(const void *send, size_t sendCount, int to, void *recv, size_t recvCount,
                        int from, CommDType dtype) override;
  Status finishPosted() override;
  // The float32 overloads, which the overrides would otherwise hide.
  using Communicator::allGather;
  using Communicator::allToAll;
  using Communicator::allReduceSum;
  using Communicator::reduceScatterSum;

protected:
  RingCommunicator(int rank, int size)
      : rank_(rank), size_(size), sentTo_(static_cast<size_t>(size)),
        receivedFrom_(static_cast<size_t>(size)) {}
  virtual Transport &transport() = 0;

  // The first half of every backend's split(): a ring all-gather (numbered like a collective,
  // but not counted: it belongs to no program) of every rank's color and key, so that each
  // rank learns the groups, and every rank has arrived, within the timeout.
  // colorKey[2r], colorKey[2r+1] are rank r's; *sequence is the exchange's number, the same on
  // every rank. Errors read "rank R: split #S: ...".
  Status exchangeSplitRequests(int color, int key, std::vector<int32_t> *colorKey,
                               uint64_t *sequence);

private:
  // Checks what every collective needs (the element type, the size), numbers it and counts the
  // call; *sequence is its number.
  Status begin(CollectiveKind kind, size_t elements, CommDType dtype, uint64_t *sequence);
  // The error of collective `sequence` of `kind`, with this rank and the collective in front.
  Status labelled(CollectiveKind kind, uint64_t sequence, const Status &status) const {
    return Communicator::labelled(collectiveName(kind), sequence, status);
  }
  // transfer() and transferPosted(): the same checks, numbering and counting; `posted` posts
  // the send half.
  Status pointToPoint(bool posted, const void *send, size_t sendCount, int to, void *recv,
                      size_t recvCount, int from, CommDType dtype);
  // One chunk of scratch memory, in bytes; grows only, so steady-state steps allocate nothing.
  void *scratch(size_t bytes);

  int rank_;
  int size_;
  uint64_t sequence_ = 0;
  uint64_t transfers_ = 0; // this rank's transfers, for messages
  // Per peer, the transfers sent to it and received from it (each pair's message numbers).
  std::vector<uint64_t> sentTo_, receivedFrom_;
  std::vector<unsigned char> scratch_;
};

} // namespace shardc::runtime
