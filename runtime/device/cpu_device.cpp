// The CPU device: host memory from AlignedBuffer (counted by the active MemoryScope's tracker,
// as the plan counts it), work done at once in the calling thread. Its streams and events exist
// so that code written for a device with queues runs unchanged here; on the CPU every queue is
// already in order and finished when a call returns.
#include "runtime/device/device.h"
#include "runtime/support/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace shardc::runtime {

namespace {

constexpr size_t kAlignment = 256;

// aligned_alloc of `bytes` (which it needs rounded up to the alignment; a zero-byte buffer still
// gets a unique pointer), or an error naming `what`.
Status alignedAllocation(size_t bytes, const char *what, void **out) {
  const size_t rounded =
      bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  *out = std::aligned_alloc(kAlignment, rounded);
  if (*out == nullptr)
    return Status::error(std::string("out of host memory allocating ") + what + " (" +
                         std::to_string(bytes) + " bytes)");
  return Status::ok();
}

class CpuStream final : public DeviceStream {
public:
  void *nativeHandle() const override { return nullptr; }
};

class CpuEvent final : public DeviceEvent {};

class CpuDevice final : public Device {
public:
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  bool addressesHostMemory() const override { return true; }
  std::string describe() const override { return "cpu"; }

  Status allocate(size_t bytes, const char *what, void **out) override {
    AlignedBuffer buffer;
    if (!AlignedBuffer::allocate(bytes, what, &buffer).isOk())
      return Status::error(std::string("out of host memory allocating ") + what + " (" +
                           std::to_string(bytes) + " bytes)");
    void *p = buffer.data();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      countAllocation(bytes);
      buffers_.emplace(p, Allocation{bytes, std::move(buffer)});
    }
    *out = p;
    return Status::ok();
  }

  void free(void *pointer) override {
    if (pointer == nullptr)
      return;
    AlignedBuffer released; // freed (and its charge released) outside the lock
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = buffers_.find(pointer);
      if (it == buffers_.end())
        return;
      countFree(it->second.bytes);
      released = std::move(it->second.buffer);
      buffers_.erase(it);
    }
  }

  Status allocateHost(size_t bytes, const char *what, void **out) override {
    return alignedAllocation(bytes, what, out);
  }
  void freeHost(void *pointer) override { std::free(pointer); }

  DeviceStream *defaultStream() override { return &defaultStream_; }
  Status createStream(std::unique_ptr<DeviceStream> *out) override {
    *out = std::make_unique<CpuStream>();
    return Status::ok();
  }
  Status createEvent(std::unique_ptr<DeviceEvent> *out) override {
    *out = std::make_unique<CpuEvent>();
    return Status::ok();
  }
  Status recordEvent(DeviceEvent *, DeviceStream *) override { return Status::ok(); }
  Status waitEvent(DeviceStream *, DeviceEvent *) override { return Status::ok(); }
  Status synchronize(DeviceStream *) override { return Status::ok(); }

  Status copyHostToDevice(void *dst, const void *src, size_t bytes, DeviceStream *) override {
    return copy(dst, src, bytes);
  }
  Status copyDeviceToHost(void *dst, const void *src, size_t bytes, DeviceStream *) override {
    return copy(dst, src, bytes);
  }
  Status copyDeviceToDevice(void *dst, const void *src, size_t bytes, DeviceStream *) override {
    return copy(dst, src, bytes);
  }
  Status fill(void *dst, uint8_t value, size_t bytes, DeviceStream *) override {
    if (bytes != 0)
      std::memset(dst, value, bytes);
    return Status::ok();
  }

private:
  static Status copy(void *dst, const void *src, size_t bytes) {
    // memmove: a copy onto itself (an in-place update) is allowed.
    if (bytes != 0)
      std::memmove(dst, src, bytes);
    return Status::ok();
  }

  // What allocate() handed out: the requested size (what the counters count) and the buffer.
  struct Allocation {
    size_t bytes;
    AlignedBuffer buffer;
  };
  std::mutex mutex_;
  std::unordered_map<void *, Allocation> buffers_;
  CpuStream defaultStream_;
};

} // namespace

std::unique_ptr<Device> createCpuDevice() { return std::make_unique<CpuDevice>(); }

} // namespace shardc::runtime
