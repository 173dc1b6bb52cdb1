// Philox4x32-10, the counter-based random number generator of Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3" (SC 2011), bit-identical to Random123's philox4x32 with 10 rounds
// (also what curand and JAX implement).
//
// A counter-based generator has no state to advance: output block c under key k is a pure
// function of (c, k). That is what training needs: a dropout mask element or a data-sampling
// offset depends only on (seed, step, tensor, element index), so it is the same however the
// work is split across ranks or threads and whatever ran before (resuming at step k draws
// exactly what an uninterrupted run drew at step k).
#pragma once

#include "runtime/support/philox_core.h" // the algorithm, shared with device code

#include <array>
#include <cstddef>
#include <cstdint>

namespace shardc::runtime {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;
using PhiloxBlock = std::array<uint32_t, 4>;

// One Philox4x32-10 block: 4 random 32-bit words for (counter, key).
PhiloxBlock philox4x32(const PhiloxCounter &counter, const PhiloxKey &key);

// uniformFloat(bits), a float uniform in [0, 1), and philoxStreamId(step, tensorId) are in
// philox_core.h.

// Tensor id reserved for data sampling (token-window offsets), so that the data stream of a
// step never coincides with the stream of a tensor the model draws from (dropout etc.).
constexpr uint32_t kDataSamplingStreamTensorId = 0xFFFFFFFFu;

// An endless sequence of 32-bit words keyed by (seed, streamId): word i is word i % 4 of the
// Philox block with counter (i / 4 as 64 bits, streamId as 64 bits) under key = seed. Distinct
// (seed, streamId, i) never share a counter/key pair, so streams never overlap.
class PhiloxStream {
public:
  PhiloxStream(uint64_t seed, uint64_t streamId);

  // Word i of the stream.
  uint32_t word(uint64_t index) const;
  // uniformFloat(word(index)).
  float uniform(uint64_t index) const { return uniformFloat(word(index)); }
  // Writes words [first, first + count) to `out`, computing each block once.
  void fill(uint64_t first, size_t count, uint32_t *out) const;

  uint64_t seed() const { return seed_; }
  uint64_t streamId() const { return streamId_; }

private:
  PhiloxBlock block(uint64_t blockIndex) const;

  uint64_t seed_;
  uint64_t streamId_;
};

} // namespace shardc::runtime
