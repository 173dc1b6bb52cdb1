#include "runtime/memory/tracked_allocator.h"

#include <cstdint>
#include <cstdlib>
#include <new>

namespace shardc::runtime {

namespace {

// The header in front of each block: where the block was charged.
struct BlockHeader {
  MemoryCharge charge;
};
static_assert(sizeof(BlockHeader) <= kTrackedAlignment, "the header must fit its slot");

} // namespace

void *trackedAllocate(size_t bytes) {
  if (bytes > SIZE_MAX - kTrackedAlignment)
    throw std::bad_alloc();
  // malloc's blocks are aligned for any fundamental type (16 bytes on x86-64 and aarch64), so
  // the data behind a 16-byte header is too.
  void *block = std::malloc(bytes + kTrackedAlignment);
  if (block == nullptr)
    throw std::bad_alloc();
  MemoryCharge charge = currentMemoryCharge();
  new (block) BlockHeader{charge};
  charge.allocated(bytes);
  return static_cast<uint8_t *>(block) + kTrackedAlignment;
}

void trackedDeallocate(void *data, size_t bytes) noexcept {
  if (data == nullptr)
    return;
  void *block = static_cast<uint8_t *>(data) - kTrackedAlignment;
  static_cast<BlockHeader *>(block)->charge.released(bytes);
  std::free(block);
}

} // namespace shardc::runtime
