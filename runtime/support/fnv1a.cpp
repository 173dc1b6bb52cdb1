#include "runtime/support/fnv1a.h"

namespace shardc::runtime {

namespace {
constexpr uint64_t kFnv1a64Prime = 0x100000001b3ULL;
} // namespace

uint64_t fnv1a64(const void *data, size_t size, uint64_t state) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    state ^= bytes[i];
    state *= kFnv1a64Prime;
  }
  return state;
}

} // namespace shardc::runtime
