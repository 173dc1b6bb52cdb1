// The kinds of collectives, and the bytes one rank sends in one, shared by the compiler (which
// predicts them for the plan) and the runtime (whose ring algorithm sends exactly this much;
// tests compare the two).
//
// Every collective here works on a buffer of `paddedElements` elements of `elementBytes` bytes
// each (4 for f32, 2 for bf16 and f16, 1 for an all_gather of raw bytes, its elements then being
// bytes) that the kernel has padded to a multiple of the number of ranks N
// (chunk = paddedElements / N):
//   all_reduce      ring reduce-scatter then ring all-gather: 2 (N-1) chunks, i.e. 2S(N-1)/N
//   reduce_scatter  (N-1) chunks, i.e. S(N-1)/N of the full input of size S
//   all_gather      (N-1) chunks, i.e. S(N-1)/N of the full output of size S
//   all_to_all      (N-1) chunks, i.e. S(N-1)/N of this rank's buffer of size S (chunk j goes
//                   to rank j; the rank keeps its own)
//   send_recv       a point-to-point transfer (pipeline stages): the S bytes this rank sends
//                   to its peer, unpadded, whatever N (paddedElements is then the message's
//                   element count)
// With one rank nothing is sent.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardc::runtime {

// SendRecv is no collective (only two ranks take part), but it is counted and planned as one.
enum class CollectiveKind {
  AllReduce = 0,
  ReduceScatter = 1,
  AllGather = 2,
  AllToAll = 3,
  SendRecv = 4
};
constexpr int kCollectiveKinds = 5;
// "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv" (the names used in
// plans and program kernels).
const char *collectiveName(CollectiveKind kind);
// The collective program kernel `kernel` runs (the inverse of collectiveName); false for any
// other kernel, shard_slice included (it only cuts this rank's shard).
bool collectiveOfKernel(std::string_view kernel, CollectiveKind *kind);

// `elements` rounded up to a multiple of `ranks` (the padded size of a collective's buffer).
uint64_t paddedToRanks(uint64_t elements, int ranks);

// Bytes one rank sends for a collective of `kind` over a padded buffer of `paddedElements`
// elements (a multiple of `ranks`) of `elementBytes` bytes each (commDTypeSize of its CommDType,
// runtime/comm/communicator.h).
uint64_t collectiveBytesSent(CollectiveKind kind, uint64_t paddedElements, int ranks,
                             uint64_t elementBytes);

} // namespace shardc::runtime
