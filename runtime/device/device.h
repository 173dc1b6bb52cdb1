// The device layer: where a rank's memory lives and its work runs. The executor, the kernels'
// callers and the tests speak to a Device, never to a vendor runtime, so that one runtime runs
// the same bundle on the CPU and on a GPU (the bundle itself is device-neutral).
//
// A device hands out memory it counts (so that the measured peak can be compared with the
// plan), copies between host and device memory and within the device, and orders work on
// streams: work queued on one stream runs in order; an event recorded on one stream and waited
// for on another orders work across them (a collective on the communication stream after the
// gradient it reduces). The CPU device runs all work at once, in the caller's thread: its
// streams are already in order, so its events are no-ops.
#pragma once

#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace shardc::runtime {

enum class DeviceKind { Cpu, Cuda };

// "cpu", "cuda".
const char *deviceKindName(DeviceKind kind);

// What `--device` asks for: a device kind, or "auto" (cuda when a GPU is visible, else cpu).
enum class DeviceChoice { Cpu, Cuda, Auto };
// "cpu", "cuda" or "auto"; anything else is an error naming the accepted values.
Status parseDeviceChoice(const std::string &text, DeviceChoice *out);

// A queue of work on a device. Opaque: each device defines what it holds.
class DeviceStream {
public:
  virtual ~DeviceStream() = default;
  // The vendor handle kernels launch on (cudaStream_t for CUDA; null on the CPU).
  virtual void *nativeHandle() const = 0;
};

// A point in a stream's work, for another stream to wait for.
class DeviceEvent {
public:
  virtual ~DeviceEvent() = default;
};

// Bytes a device handed out, for the memory report.
struct DeviceMemoryCounters {
  uint64_t inUse = 0;       // allocated and not yet freed
  uint64_t peak = 0;        // the most ever in use at once
  uint64_t allocations = 0; // calls to allocate() that succeeded
};

class Device {
public:
  virtual ~Device() = default;

  virtual DeviceKind kind() const = 0;
  // Whether the device's kernels read and write host memory directly (the CPU): host data
  // then needs no copy of its own on the device (the executor reads the weights in place).
  virtual bool addressesHostMemory() const = 0;
  // "cpu" or "cuda:0 (NVIDIA H100 80GB HBM3, 79.1 GiB)", for logs.
  virtual std::string describe() const = 0;

  // `bytes` of device memory, aligned as the device's kernels need (256 bytes on CUDA, 64 on
  // the CPU: kBufferAlignment), zeroed on the CPU (a zero-byte request gets a valid, unique
  // pointer). `what` names the buffer in the error when the device is out of memory. The CPU
  // device takes host memory from AlignedBuffer, so the MemoryTracker of the active
  // MemoryScope counts it as the plan counts it.
  virtual Status allocate(size_t bytes, const char *what, void **out) = 0;
  // Returns memory allocate() gave; null is ignored.
  virtual void free(void *pointer) = 0;
  // Host memory the device copies from and to at full speed (page-locked for CUDA), for step
  // inputs and outputs; not counted as device memory.
  virtual Status allocateHost(size_t bytes, const char *what, void **out) = 0;
  virtual void freeHost(void *pointer) = 0;

  // The stream work is queued on when none is named (the default stream).
  virtual DeviceStream *defaultStream() = 0;
  virtual Status createStream(std::unique_ptr<DeviceStream> *out) = 0;
  virtual Status createEvent(std::unique_ptr<DeviceEvent> *out) = 0;
  // Marks the point `stream` has reached (work queued so far).
  virtual Status recordEvent(DeviceEvent *event, DeviceStream *stream) = 0;
  // Work queued on `stream` from now on starts after `event`'s point.
  virtual Status waitEvent(DeviceStream *stream, DeviceEvent *event) = 0;
  // Blocks the calling thread until `stream` (null: every stream) finished its work.
  virtual Status synchronize(DeviceStream *stream = nullptr) = 0;

  // Queued on `stream` (null: the default one). Host memory given to an asynchronous copy must
  // stay valid, and unchanged, until the stream has passed the copy.
  virtual Status copyHostToDevice(void *dst, const void *src, size_t bytes,
                                  DeviceStream *stream = nullptr) = 0;
  virtual Status copyDeviceToHost(void *dst, const void *src, size_t bytes,
                                  DeviceStream *stream = nullptr) = 0;
  virtual Status copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                                    DeviceStream *stream = nullptr) = 0;
  // Sets `bytes` bytes at `dst` to `value`.
  virtual Status fill(void *dst, uint8_t value, size_t bytes, DeviceStream *stream = nullptr) = 0;

  DeviceMemoryCounters memoryCounters() const { return counters_; }

protected:
  void countAllocation(size_t bytes);
  void countFree(size_t bytes);

private:
  DeviceMemoryCounters counters_;
};

// The CPU device (always available).
std::unique_ptr<Device> createCpuDevice();

// Whether this build can drive CUDA devices and one is visible; when not, `why` says which
// ("shardrun was built without CUDA", "no CUDA device is visible: ...").
bool cudaDeviceAvailable(std::string *why);

// CUDA device `ordinal` (as the CUDA runtime numbers the visible devices). An error, never a
// crash, when the build has no CUDA, no device is visible or `ordinal` is out of range.
Status createCudaDevice(int ordinal, std::unique_ptr<Device> *out);

// The device `choice` names: auto picks cuda when cudaDeviceAvailable(), else cpu.
Status createDevice(DeviceChoice choice, int cudaOrdinal, std::unique_ptr<Device> *out);

// Memory a device allocated, freed when the owner goes (a buffer of the arena, the workspace).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  static Status allocate(Device *device, size_t bytes, const char *what, DeviceBuffer *out);
  void reset();

  void *data() const { return data_; }
  size_t size() const { return size_; }

private:
  Device *device_ = nullptr;
  void *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace shardc::runtime
