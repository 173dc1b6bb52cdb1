// The collectives a rank's program needs, behind one interface with three backends:
//   local  ranks as threads of one process (the default outside MPI, and the test harness),
//   mpi    one process per rank under mpirun/srun (OpenMPI),
//   nccl   GPUs (compiled when CUDA is found; bootstrapped through MPI).
//
// Collectives carry their element type (CommDType): f32, bf16 or f16, which the reductions sum,
// or raw bytes, which only all_gather and all_to_all move. local and mpi run the same ring algorithm
// (runtime/comm/ring.h) over their own transport, so a run gives bit-identical results on
// either, whatever the thread or process timing: each element is reduced in a fixed order.
// Every wait has a deadline: a rank that dies or stops answering makes every other rank's
// collective fail within CommOptions::timeoutSeconds with a message naming the rank, the
// collective and the cause, instead of hanging.
//
// A communicator can be split into groups (split(), MPI_Comm_split's semantics): each group is a
// communicator of its own, with its own ranks 0..n-1, collective numbering and counters, over
// which the same collectives run. Messages always name ranks by their number in the world the
// first communicator was created for ("rank 3: all_reduce #2 in group 'tp' (ranks 2, 3): timed
// out after 30 s waiting for rank 2"), and a failure or abort anywhere ends the collectives of
// the world and of every group split from it.
#pragma once

#include "runtime/common/comm_cost.h"
#include "runtime/support/status.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {

// The element type of a collective's buffers. A reduction adds two f32 values as f32; two bf16
// or f16 values are widened to f32, added, and the sum rounded back to the 16-bit type (to
// nearest, ties to even) at every ring step, as NCCL does for bf16. Bytes are moved, never
// added: all_gather, all_to_all and send_recv only (several tensors of different dtypes packed
// together);
// a reduction of Bytes is an error.
enum class CommDType { F32 = 0, BF16 = 1, F16 = 2, Bytes = 3 };
// Bytes per element: 4, 2, 2, 1; 0 for a value outside the enum.
size_t commDTypeSize(CommDType dtype);
// "f32", "bf16", "f16", "bytes" (as in messages and docs/kernels.md).
const char *commDTypeName(CommDType dtype);

// What one rank has sent: payload bytes handed to the transport, per collective kind. These
// are the bytes the plan predicts (runtime/common/comm_cost.h).
struct CommCounters {
  uint64_t calls[kCollectiveKinds] = {};
  uint64_t bytesSent[kCollectiveKinds] = {};
  uint64_t totalBytesSent() const;
};

struct CommOptions {
  // How long a rank waits for a peer inside one collective before giving up.
  double timeoutSeconds = 30.0;
};

// Every backend's check of a collective's element type, before anything is sent: a known
// CommDType, and not Bytes for a reduction. The message names no rank (the caller labels it):
// "cannot sum raw bytes (CommDType::Bytes is for all_gather, all_to_all and send_recv only)".
Status checkCommDType(CollectiveKind kind, CommDType dtype);

// Every backend's check of a point-to-point transfer's arguments (Communicator::transfer) on a
// communicator of `size` ranks, before anything is sent: each peer kNoPeer or another rank,
// a count only toward a peer, at least one of them, non-null and disjoint buffers, and byte
// counts within size_t. The message names no rank (the caller labels it).
Status checkTransfer(int rank, int size, const void *send, size_t sendCount, int to,
                     const void *recv, size_t recvCount, int from, CommDType dtype);

// Every backend's factory checks its options with this: the timeout must be positive and finite
// (an infinite one would let a dead peer hang the job).
Status validateCommOptions(const CommOptions &options);

// The failure messages every backend uses, so that they read the same whichever one runs:
// "timed out after 30 s waiting for rank 3" and "rank 2 failed: <cause>". Callers prefix them
// with their own rank and the collective ("rank 0: all_reduce #12: ...").
std::string commTimeoutMessage(double timeoutSeconds, int peer);
std::string commPeerFailedMessage(int failedRank, const std::string &cause);

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "local", "mpi" or "nccl".
  virtual const char *backendName() const = 0;

  // Splits this communicator into groups, as MPI_Comm_split does: a collective that every rank
  // of this communicator calls (in the same order relative to its other collectives). The ranks
  // that pass the same `color` >= 0 form one new communicator, in which they are numbered in
  // the order of their `key`, ties broken by their rank here; *out is this rank's. A rank that
  // passes a negative color (kNoGroup) joins no group and gets null. The new communicator has
  // this one's backend and current timeout, and counts its own calls and bytes; an abort of
  // any communicator of the family (this one, its groups, theirs) fails all of them. Waits at
  // most the timeout for the other ranks, like any collective ("rank 1: split #4: ...").
  virtual Status split(int color, int key, std::unique_ptr<Communicator> *out) = 0;
  static constexpr int kNoGroup = -1;

  // The number in the world (the communicator the backend created, before any split) of this
  // communicator's rank `rank`; rank itself for a world.
  int worldRankOf(int rank) const;
  int worldRank() const { return worldRankOf(this->rank()); }
  // Whether this communicator came from split().
  bool isGroup() const { return !worldRanks_.empty(); }
  // A name for messages and reports ("tp"); empty for a world and for a group not yet named.
  const std::string &groupName() const { return groupName_; }
  void setGroupName(std::string name) { groupName_ = std::move(name); }
  // " in group 'tp' (ranks 2, 3)" for a group (the world ranks of its members, the first few
  // of a large one), "" for a world: what collective errors put after the collective's name.
  std::string groupSuffix() const;

  // The collectives count elements of `dtype`, and every rank passes the same `dtype` and count.
  // data[0, count) <- sum over ranks of every rank's data[0, count). In place.
  virtual Status allReduceSum(void *data, size_t count, CommDType dtype) = 0;
  // out[0, chunk) <- sum over ranks r' of in_{r'}[rank()*chunk, (rank()+1)*chunk), where each
  // rank's `in` holds size()*chunk elements. `in` and `out` must not overlap.
  virtual Status reduceScatterSum(const void *in, void *out, size_t chunk, CommDType dtype) = 0;
  // out[r*chunk, (r+1)*chunk) <- rank r's in[0, chunk), for every r. `out` holds size()*chunk
  // elements and must not overlap `in`. Any dtype, Bytes included: nothing is added.
  virtual Status allGather(const void *in, void *out, size_t chunk, CommDType dtype) = 0;
  // out[r*chunk, (r+1)*chunk) <- rank r's in[rank()*chunk, (rank()+1)*chunk), for every r: each
  // rank's chunk j goes to rank j (MPI_Alltoall). `in` and `out` hold size()*chunk elements and
  // must not overlap. Any dtype, Bytes included: nothing is added.
  virtual Status allToAll(const void *in, void *out, size_t chunk, CommDType dtype) = 0;

  // A point-to-point transfer (the activations and gradients between pipeline stages): sends
  // send[0, sendCount) to rank `to` while receiving recvCount elements from rank `from` into
  // recv, and returns once both are done. Either peer may be kNoPeer (a send alone, a receive
  // alone); to and from may be the same rank (an exchange). Only the ranks involved call it.
  // Each ordered pair of ranks numbers its transfers on its own, apart from the collectives:
  // the k-th transfer that sends from r to t is the k-th that receives at t from r, and must
  // carry the same count (else both fail, naming the disagreement). Both halves happen at
  // once, so two stages that send to each other cannot deadlock. The same deadline, failure
  // and abort rules as the collectives; the bytes count as send_recv. A receive waits for its
  // message; a send may finish before its peer receives it (MPI buffers small messages), the
  // local backend's only once the peer has copied it.
  virtual Status transfer(const void *send, size_t sendCount, int to, void *recv,
                          size_t recvCount, int from, CommDType dtype) = 0;
  static constexpr int kNoPeer = -1;
  // The same with the send half posted (MPI_Isend, Megatron's batched isend): the message is
  // copied and the call returns once the receive half is done, without waiting for `to` to
  // take it. Schedules in which every rank sends before it receives around a ring (the
  // interleaved pipeline once it has more microbatches than stages) need it: with transfer()
  // they would wait on each other forever. A pair's messages still arrive in the order they
  // were sent and are numbered with transfer()'s; a posted message is received by a
  // transferPosted on the other side (the nccl backend carries them apart from its own
  // transfers). A receiver expecting another count fails and aborts the world, so the sender
  // learns it at its next call. The copies live in the communicator until received: at most
  // the bytes the schedule has in flight.
  virtual Status transferPosted(const void *send, size_t sendCount, int to, void *recv,
                                size_t recvCount, int from, CommDType dtype) = 0;
  // Waits (at most the timeout) until every message this rank posted has been taken, so that
  // a step ends with its messages delivered; "rank R: posted transfers: ..." when not.
  virtual Status finishPosted() = 0;

  // The same on float32 data.
  Status allReduceSum(float *data, size_t count) {
    return allReduceSum(data, count, CommDType::F32);
  }
  Status reduceScatterSum(const float *in, float *out, size_t chunk) {
    return reduceScatterSum(in, out, chunk, CommDType::F32);
  }
  Status allGather(const float *in, float *out, size_t chunk) {
    return allGather(in, out, chunk, CommDType::F32);
  }
  Status allToAll(const float *in, float *out, size_t chunk) {
    return allToAll(in, out, chunk, CommDType::F32);
  }

  // Tells the other ranks that this one failed with `cause`, so that their pending and future
  // collectives fail at once with "rank R failed: cause" instead of waiting for the timeout.
  // Best effort; never blocks for long. Under MPI it ends the job (MPI_Abort).
  virtual void abort(const std::string &cause) = 0;

  const CommCounters &counters() const { return counters_; }

  // How long this rank waits for a peer inside one collective before it fails
  // (CommOptions::timeoutSeconds when the communicator was created).
  double timeoutSeconds() const { return timeoutSeconds_; }
  // Changes it for the collectives this rank starts from now on (checked as CommOptions is).
  Status setTimeoutSeconds(double seconds);

protected:
  // "rank W: <what> #S<groupSuffix()>: <status's message>" (W: this rank in the world); `status`
  // itself when it is ok. Every backend's collective errors read this way.
  Status labelled(const char *what, uint64_t sequence, const Status &status) const;

  // When a wait that starts now gives up (a year at most, so that huge timeouts cannot
  // overflow the clock).
  std::chrono::steady_clock::time_point deadlineFromNow() const;

  CommCounters counters_;
  double timeoutSeconds_ = CommOptions().timeoutSeconds;
  // A group's members' world ranks, in group rank order; empty for a world.
  std::vector<int> worldRanks_;
  std::string groupName_;
};

// The members of the group of `color` after a split in which rank r of the split communicator
// passed (colorKey[2r], colorKey[2r+1]): their ranks there, ordered by key, then by rank.
// Empty for a negative color.
std::vector<int> splitMembers(const std::vector<int32_t> &colorKey, int color);

// Gives `comm` (null: none) a longer timeout while it lives, then the previous one back: for
// the exchanges that follow long work on one rank which the others wait through (loading a
// large bundle, writing a checkpoint), where the usual timeout, sized for the gaps between
// collectives of a step, would end a healthy run.
class CommTimeoutScope {
public:
  CommTimeoutScope(Communicator *comm, double atLeastSeconds);
  ~CommTimeoutScope();
  CommTimeoutScope(const CommTimeoutScope &) = delete;
  CommTimeoutScope &operator=(const CommTimeoutScope &) = delete;

private:
  Communicator *comm_;
  double previous_ = 0;
};

} // namespace shardc::runtime
