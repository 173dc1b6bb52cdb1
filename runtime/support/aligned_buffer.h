// An owning, 64-byte-aligned byte buffer. Tensors in the arena and the weights region sit at
// 64-aligned offsets, so their bases must be 64-aligned too for kernels to rely on alignment.
//
// Allocations are reported to the MemoryTracker of the MemoryScope active when allocate() runs
// (runtime/support/memory_tracker.h), and their release to the same tracker.
#pragma once

#include "runtime/support/memory_tracker.h"
#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>

namespace shardc::runtime {

constexpr size_t kBufferAlignment = 64;

class AlignedBuffer {
public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  AlignedBuffer(AlignedBuffer &&other) noexcept;
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept;
  ~AlignedBuffer();

  // Allocates `size` zeroed bytes. Even an empty buffer gets real memory, so a view of a
  // zero-size tensor is never mistaken for an absent operand (data == nullptr). `what` names
  // the buffer in the out-of-memory message.
  static Status allocate(size_t size, const char *what, AlignedBuffer *out);

  uint8_t *data() { return data_; }
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  // Bytes actually obtained from the system (size rounded up to the alignment, at least one
  // alignment unit).
  size_t allocatedBytes() const { return allocated_; }
  // What allocate(size) obtains from the system: the planned peak (runtime/common/
  // planned_memory.h) counts the program's regions this way, so that it equals the measurement.
  static uint64_t allocationSize(uint64_t size);

private:
  void release();

  uint8_t *data_ = nullptr;
  size_t size_ = 0;
  size_t allocated_ = 0;
  MemoryCharge charge_; // where allocated_ was counted
};

} // namespace shardc::runtime
