// The arithmetic of Philox4x32-10 and of the streams built on it (philox.h), as header-only
// functions that compile for the host and, under nvcc, for the device too: the CUDA kernels that
// draw random values (dropout) must reproduce the CPU's words bit for bit, so both run this one
// copy of the algorithm rather than two that could drift apart. Plain integer arithmetic on
// plain arrays (no std::array, no library calls), which nvcc accepts in device code as is.
#pragma once

#include <cstdint>

// Marks a function callable from host and device code when compiled by nvcc; plain C++ otherwise.
#if defined(__CUDACC__)
#define SHARDC_HOST_DEVICE __host__ __device__
#else
#define SHARDC_HOST_DEVICE
#endif

namespace shardc::runtime {

// Round multipliers and Weyl key increments from the Philox paper (Random123's
// PHILOX_M4x32_0/1 and PHILOX_W32_0/1).
constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53u;
constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxKeyIncrement0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxKeyIncrement1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;

// One Philox4x32-10 block: x (the counter on entry) becomes the 4 random words for key (k0, k1).
SHARDC_HOST_DEVICE inline void philox4x32Block(uint32_t x[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    // The key is bumped between rounds: round 0 uses the key as given.
    if (round > 0) {
      k0 += kPhiloxKeyIncrement0;
      k1 += kPhiloxKeyIncrement1;
    }
    // The 64-bit products' high and low halves (mulhilo).
    const uint64_t product0 = static_cast<uint64_t>(kPhiloxMultiplier0) * x[0];
    const uint64_t product1 = static_cast<uint64_t>(kPhiloxMultiplier1) * x[2];
    const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32);
    const uint32_t lo0 = static_cast<uint32_t>(product0);
    const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32);
    const uint32_t lo1 = static_cast<uint32_t>(product1);
    const uint32_t x1 = x[1], x3 = x[3];
    x[0] = hi1 ^ x1 ^ k0;
    x[1] = lo1;
    x[2] = hi0 ^ x3 ^ k1;
    x[3] = lo0;
  }
}

// Block `blockIndex` of the stream (seed, streamId) (PhiloxStream): counter (blockIndex as 64
// bits, then streamId as 64 bits), low words first, under key = seed (low word first).
SHARDC_HOST_DEVICE inline void philoxStreamBlock(uint64_t seed, uint64_t streamId,
                                                 uint64_t blockIndex, uint32_t out[4]) {
  out[0] = static_cast<uint32_t>(blockIndex);
  out[1] = static_cast<uint32_t>(blockIndex >> 32);
  out[2] = static_cast<uint32_t>(streamId);
  out[3] = static_cast<uint32_t>(streamId >> 32);
  philox4x32Block(out, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// A float uniform in [0, 1) from the top 24 bits of `bits` (every value a multiple of 2^-24,
// exactly representable in f32, so 1.0 is never produced). Both steps are exact, so every
// compiler and device gives the same float.
SHARDC_HOST_DEVICE inline float uniformFloat(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// The stream id of the random values tensor `tensorId` uses at training step `step`.
SHARDC_HOST_DEVICE constexpr uint64_t philoxStreamId(uint32_t step, uint32_t tensorId) {
  return (static_cast<uint64_t>(step) << 32) | tensorId;
}

} // namespace shardc::runtime
