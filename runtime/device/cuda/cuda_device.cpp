// The CUDA device: memory from cudaMalloc, copies and work on CUDA streams. Plain C++ over the
// CUDA runtime API (no CUDA language), so it builds wherever the toolkit's headers and cudart are.
//
// Every call first makes the device current in the calling thread (cudaSetDevice is per
// thread, and ranks run as threads that may share one GPU), then checks the CUDA error so that
// a failure is a Status naming what was done, never a crash.
#include "runtime/device/device.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <mutex>
#include <unordered_map>

namespace shardc::runtime {

namespace {

std::string cudaMessage(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

Status cudaStatus(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return Status::ok();
  // Clears the error the runtime keeps for the thread, so that the next call does not report
  // this one again.
  cudaGetLastError();
  return Status::error(std::string("cuda: ") + what + ": " + cudaMessage(error));
}

class CudaStream final : public DeviceStream {
public:
  explicit CudaStream(cudaStream_t stream) : stream_(stream) {}
  ~CudaStream() override {
    if (stream_ != nullptr)
      cudaStreamDestroy(stream_);
  }
  void *nativeHandle() const override { return stream_; }
  cudaStream_t stream() const { return stream_; }

private:
  cudaStream_t stream_;
};

class CudaEvent final : public DeviceEvent {
public:
  explicit CudaEvent(cudaEvent_t event) : event_(event) {}
  ~CudaEvent() override { cudaEventDestroy(event_); }
  cudaEvent_t event() const { return event_; }

private:
  cudaEvent_t event_;
};

class CudaDevice final : public Device {
public:
  static Status create(int ordinal, std::unique_ptr<Device> *out) {
    int count = 0;
    SHARDC_RETURN_IF_ERROR(cudaStatus(cudaGetDeviceCount(&count), "counting devices"));
    if (ordinal < 0 || ordinal >= count)
      return Status::error("cuda device " + std::to_string(ordinal) + " does not exist (" +
                           std::to_string(count) + " visible)");
    std::unique_ptr<CudaDevice> device(new CudaDevice(ordinal));
    SHARDC_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(ordinal), "selecting the device"));
    cudaDeviceProp props{};
    SHARDC_RETURN_IF_ERROR(
        cudaStatus(cudaGetDeviceProperties(&props, ordinal), "reading the device's properties"));
    char text[256];
    std::snprintf(text, sizeof text, "cuda:%d (%s, sm_%d%d, %.1f GiB)", ordinal, props.name,
                  props.major, props.minor, static_cast<double>(props.totalGlobalMem) / (1ull << 30));
    device->description_ = text;
    cudaStream_t stream = nullptr;
    // Non-blocking: the legacy default stream would serialise with every other stream.
    SHARDC_RETURN_IF_ERROR(cudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                                      "creating the default stream"));
    device->defaultStream_ = std::make_unique<CudaStream>(stream);
    *out = std::move(device);
    return Status::ok();
  }

  DeviceKind kind() const override { return DeviceKind::Cuda; }
  bool addressesHostMemory() const override { return false; }
  std::string describe() const override { return description_; }

  Status allocate(size_t bytes, const char *what, void **out) override {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    void *p = nullptr;
    // cudaMalloc returns 256-byte aligned memory; a zero-byte request still gets a unique one.
    cudaError_t error = cudaMalloc(&p, bytes == 0 ? 256 : bytes);
    if (error != cudaSuccess) {
      cudaGetLastError();
      size_t freeBytes = 0, totalBytes = 0;
      cudaMemGetInfo(&freeBytes, &totalBytes);
      return Status::error(std::string("cuda: out of device memory allocating ") + what + " (" +
                           std::to_string(bytes) + " bytes; " + std::to_string(freeBytes) +
                           " of " + std::to_string(totalBytes) + " free): " + cudaMessage(error));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = bytes;
    countAllocation(bytes);
    *out = p;
    return Status::ok();
  }

  void free(void *pointer) override {
    if (pointer == nullptr)
      return;
    // free() reports nothing: should selecting the device fail, cudaFree fails quietly too.
    (void)makeCurrent().isOk();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = sizes_.find(pointer);
      if (it != sizes_.end()) {
        countFree(it->second);
        sizes_.erase(it);
      }
    }
    cudaFree(pointer);
  }

  Status allocateHost(size_t bytes, const char *what, void **out) override {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    cudaError_t error = cudaMallocHost(out, bytes == 0 ? 256 : bytes);
    if (error != cudaSuccess)
      return cudaStatus(error, (std::string("allocating pinned host memory for ") + what + " (" +
                                std::to_string(bytes) + " bytes)")
                                   .c_str());
    return Status::ok();
  }
  void freeHost(void *pointer) override {
    if (pointer != nullptr)
      cudaFreeHost(pointer);
  }

  DeviceStream *defaultStream() override { return defaultStream_.get(); }

  Status createStream(std::unique_ptr<DeviceStream> *out) override {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    cudaStream_t stream = nullptr;
    SHARDC_RETURN_IF_ERROR(cudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                                      "creating a stream"));
    *out = std::make_unique<CudaStream>(stream);
    return Status::ok();
  }

  Status createEvent(std::unique_ptr<DeviceEvent> *out) override {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    cudaEvent_t event = nullptr;
    SHARDC_RETURN_IF_ERROR(cudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                                      "creating an event"));
    *out = std::make_unique<CudaEvent>(event);
    return Status::ok();
  }

  Status recordEvent(DeviceEvent *event, DeviceStream *stream) override {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    return cudaStatus(cudaEventRecord(static_cast<CudaEvent *>(event)->event(), streamOf(stream)),
                      "recording an event");
  }

  Status waitEvent(DeviceStream *stream, DeviceEvent *event) override {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    return cudaStatus(
        cudaStreamWaitEvent(streamOf(stream), static_cast<CudaEvent *>(event)->event(), 0),
        "waiting for an event");
  }

  Status synchronize(DeviceStream *stream) override {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    if (stream == nullptr)
      return cudaStatus(cudaDeviceSynchronize(), "synchronising the device");
    return cudaStatus(cudaStreamSynchronize(streamOf(stream)), "synchronising a stream");
  }

  Status copyHostToDevice(void *dst, const void *src, size_t bytes, DeviceStream *stream) override {
    return copy(dst, src, bytes, cudaMemcpyHostToDevice, stream, "copying host to device");
  }
  Status copyDeviceToHost(void *dst, const void *src, size_t bytes, DeviceStream *stream) override {
    return copy(dst, src, bytes, cudaMemcpyDeviceToHost, stream, "copying device to host");
  }
  Status copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                            DeviceStream *stream) override {
    if (dst == src)
      return Status::ok();
    return copy(dst, src, bytes, cudaMemcpyDeviceToDevice, stream, "copying on the device");
  }
  Status fill(void *dst, uint8_t value, size_t bytes, DeviceStream *stream) override {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    if (bytes == 0)
      return Status::ok();
    return cudaStatus(cudaMemsetAsync(dst, value, bytes, streamOf(stream)), "filling memory");
  }

private:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {}

  Status makeCurrent() const { return cudaStatus(cudaSetDevice(ordinal_), "selecting the device"); }

  cudaStream_t streamOf(DeviceStream *stream) const {
    return static_cast<CudaStream *>(stream != nullptr ? stream : defaultStream_.get())->stream();
  }

  Status copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, DeviceStream *stream,
              const char *what) {
    SHARDC_RETURN_IF_ERROR(makeCurrent());
    if (bytes == 0)
      return Status::ok();
    return cudaStatus(cudaMemcpyAsync(dst, src, bytes, kind, streamOf(stream)), what);
  }

  int ordinal_;
  std::string description_;
  std::unique_ptr<CudaStream> defaultStream_;
  std::mutex mutex_;
  std::unordered_map<void *, size_t> sizes_;
};

} // namespace

bool cudaDeviceAvailable(std::string *why) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    if (why != nullptr)
      *why = "no CUDA device is visible (" + cudaMessage(error) + ")";
    return false;
  }
  if (count == 0) {
    if (why != nullptr)
      *why = "no CUDA device is visible";
    return false;
  }
  return true;
}

Status createCudaDevice(int ordinal, std::unique_ptr<Device> *out) {
  std::string why;
  if (!cudaDeviceAvailable(&why))
    return Status::error("--device cuda: " + why);
  return CudaDevice::create(ordinal, out);
}

} // namespace shardc::runtime
