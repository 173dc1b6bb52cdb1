#include "runtime/support/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace shardc::runtime {

AlignedBuffer::AlignedBuffer(AlignedBuffer &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      allocated_(std::exchange(other.allocated_, 0)),
      charge_(std::exchange(other.charge_, MemoryCharge{})) {}

AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    allocated_ = std::exchange(other.allocated_, 0);
    charge_ = std::exchange(other.charge_, MemoryCharge{});
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() { release(); }

void AlignedBuffer::release() {
  if (data_ != nullptr)
    charge_.released(allocated_);
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
  allocated_ = 0;
  charge_ = MemoryCharge{};
}

uint64_t AlignedBuffer::allocationSize(uint64_t size) {
  return size == 0 ? kBufferAlignment
                   : (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

Status AlignedBuffer::allocate(size_t size, const char *what, AlignedBuffer *out) {
  out->release();
  if (size > SIZE_MAX - kBufferAlignment)
    return Status::error(std::string("cannot allocate ") + std::to_string(size) +
                         " bytes for the " + what + " (too large)");
  size_t rounded = static_cast<size_t>(allocationSize(size));
  // std::aligned_alloc requires the size to be a multiple of the alignment: `rounded` is.
  void *p = std::aligned_alloc(kBufferAlignment, rounded);
  if (p == nullptr)
    return Status::error(std::string("out of memory: cannot allocate ") + std::to_string(size) +
                         " bytes for the " + what);
  // Zeroed so that bytes a program never writes read the same on every run.
  std::memset(p, 0, rounded);
  out->data_ = static_cast<uint8_t *>(p);
  out->size_ = size;
  out->allocated_ = rounded;
  out->charge_ = currentMemoryCharge();
  out->charge_.allocated(rounded);
  return Status::ok();
}

} // namespace shardc::runtime
