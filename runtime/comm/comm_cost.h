// The bytes one rank sends in a collective, shared by the compiler (which predicts them for the
// plan) and the runtime (whose ring algorithm sends exactly this much; tests compare the two).
//
// Every collective here works on a buffer of `paddedElements` float32 values that the kernel
// has padded to a multiple of the number of ranks N (chunk = paddedElements / N):
//   all_reduce      ring reduce-scatter then ring all-gather: 2 (N-1) chunks, i.e. 2S(N-1)/N
//   reduce_scatter  (N-1) chunks, i.e. S(N-1)/N of the full input of size S
//   all_gather      (N-1) chunks, i.e. S(N-1)/N of the full output of size S
// With one rank nothing is sent.
#pragma once

#include "runtime/comm/communicator.h"

#include <cstdint>

namespace shardc::runtime {

// `elements` rounded up to a multiple of `ranks` (the padded size of a collective's buffer).
uint64_t paddedToRanks(uint64_t elements, int ranks);

// Bytes one rank sends for a collective of `kind` over a padded buffer of `paddedElements`
// float32 values (a multiple of `ranks`).
uint64_t collectiveBytesSent(CollectiveKind kind, uint64_t paddedElements, int ranks);

} // namespace shardc::runtime
