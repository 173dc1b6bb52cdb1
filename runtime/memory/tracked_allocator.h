// A std::allocator replacement that reports every allocation to the MemoryTracker of the
// MemoryScope active on the allocating thread (memory_tracker.h), and the release to that same
// tracker, whichever thread frees it. HostTensor stores its bytes with it, so the host tensors
// a run feeds to and takes from the program are measured where they are allocated.
//
// Each block carries a 16-byte header in front of the data recording where it was charged;
// the counted size is the bytes asked for (the header is bookkeeping, not tensor data). The
// data stays 16-byte aligned, as with malloc.
#pragma once

#include "runtime/support/memory_tracker.h"

#include <cstddef>

namespace shardc::runtime {

// The untyped halves of TrackedAllocator. trackedAllocate throws std::bad_alloc when out of
// memory, as allocators must.
void *trackedAllocate(size_t bytes);
void trackedDeallocate(void *data, size_t bytes) noexcept;
inline constexpr size_t kTrackedAlignment = 16;

template <typename T> class TrackedAllocator {
public:
  using value_type = T;
  static_assert(alignof(T) <= kTrackedAlignment, "TrackedAllocator aligns to 16 bytes");

  TrackedAllocator() noexcept = default;
  template <typename U> TrackedAllocator(const TrackedAllocator<U> &) noexcept {}

  T *allocate(size_t n) { return static_cast<T *>(trackedAllocate(n * sizeof(T))); }
  void deallocate(T *p, size_t n) noexcept { trackedDeallocate(p, n * sizeof(T)); }

  // Stateless: any instance frees what another allocated (the charge travels with the block),
  // so containers swap and move their storage freely.
  template <typename U> bool operator==(const TrackedAllocator<U> &) const noexcept { return true; }
  template <typename U> bool operator!=(const TrackedAllocator<U> &) const noexcept {
    return false;
  }
};

} // namespace shardc::runtime
