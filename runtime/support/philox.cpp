#include "runtime/support/philox.h"

namespace shardc::runtime {

PhiloxBlock philox4x32(const PhiloxCounter &counter, const PhiloxKey &key) {
  PhiloxBlock x = counter;
  philox4x32Block(x.data(), key[0], key[1]);
  return x;
}

PhiloxStream::PhiloxStream(uint64_t seed, uint64_t streamId) : seed_(seed), streamId_(streamId) {}

PhiloxBlock PhiloxStream::block(uint64_t blockIndex) const {
  PhiloxBlock words;
  philoxStreamBlock(seed_, streamId_, blockIndex, words.data());
  return words;
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
