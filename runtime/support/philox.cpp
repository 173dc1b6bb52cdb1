#include "runtime/support/philox.h"

namespace shardc::runtime {

namespace {

// Round multipliers and Weyl key increments from the Philox paper (Random123's
// PHILOX_M4x32_0/1 and PHILOX_W32_0/1).
constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kKeyIncrement0 = 0x9E3779B9u;
constexpr uint32_t kKeyIncrement1 = 0xBB67AE85u;
constexpr int kRounds = 10;

void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

} // namespace

PhiloxBlock philox4x32(const PhiloxCounter &counter, const PhiloxKey &key) {
  PhiloxBlock x = counter;
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < kRounds; ++round) {
    // The key is bumped between rounds: round 0 uses the key as given.
    if (round > 0) {
      k0 += kKeyIncrement0;
      k1 += kKeyIncrement1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMultiplier0, x[0], &hi0, &lo0);
    mulhilo(kMultiplier1, x[2], &hi1, &lo1);
    x = {hi1 ^ x[1] ^ k0, lo1, hi0 ^ x[3] ^ k1, lo0};
  }
  return x;
}

PhiloxStream::PhiloxStream(uint64_t seed, uint64_t streamId) : seed_(seed), streamId_(streamId) {}

PhiloxBlock PhiloxStream::block(uint64_t blockIndex) const {
  PhiloxCounter counter = {
      static_cast<uint32_t>(blockIndex), static_cast<uint32_t>(blockIndex >> 32),
      static_cast<uint32_t>(streamId_), static_cast<uint32_t>(streamId_ >> 32)};
  PhiloxKey key = {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)};
  return philox4x32(counter, key);
}

uint32_t PhiloxStream::word(uint64_t index) const { return block(index / 4)[index % 4]; }

void PhiloxStream::fill(uint64_t first, size_t count, uint32_t *out) const {
  uint64_t index = first;
  size_t done = 0;
  while (done < count) {
    PhiloxBlock words = block(index / 4);
    for (uint64_t lane = index % 4; lane < 4 && done < count; ++lane, ++index, ++done)
      out[done] = words[lane];
  }
}

} // namespace shardc::runtime
