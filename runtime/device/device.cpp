#include "runtime/device/device.h"

#include <algorithm>
#include <utility>

namespace shardc::runtime {

const char *deviceKindName(DeviceKind kind) {
  switch (kind) {
  case DeviceKind::Cpu:
    return "cpu";
  case DeviceKind::Cuda:
    return "cuda";
  }
  return "?";
}

Status parseDeviceChoice(const std::string &text, DeviceChoice *out) {
  if (text == "cpu")
    *out = DeviceChoice::Cpu;
  else if (text == "cuda")
    *out = DeviceChoice::Cuda;
  else if (text == "auto")
    *out = DeviceChoice::Auto;
  else
    return Status::error("unknown device '" + text + "' (expected cpu, cuda or auto)");
  return Status::ok();
}

void Device::countAllocation(size_t bytes) {
  counters_.inUse += bytes;
  counters_.peak = std::max(counters_.peak, counters_.inUse);
  ++counters_.allocations;
}

void Device::countFree(size_t bytes) { counters_.inUse -= std::min<uint64_t>(bytes, counters_.inUse); }

Status createDevice(DeviceChoice choice, int cudaOrdinal, std::unique_ptr<Device> *out) {
  if (choice == DeviceChoice::Cpu || (choice == DeviceChoice::Auto && !cudaDeviceAvailable(nullptr))) {
    *out = createCpuDevice();
    return Status::ok();
  }
  return createCudaDevice(cudaOrdinal, out);
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::exchange(other.device_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Status DeviceBuffer::allocate(Device *device, size_t bytes, const char *what, DeviceBuffer *out) {
  void *data = nullptr;
  SHARDC_RETURN_IF_ERROR(device->allocate(bytes, what, &data));
  out->reset();
  out->device_ = device;
  out->data_ = data;
  out->size_ = bytes;
  return Status::ok();
}

void DeviceBuffer::reset() {
  if (device_ != nullptr)
    device_->free(data_);
  device_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

#ifndef SHARDC_HAVE_CUDA
bool cudaDeviceAvailable(std::string *why) {
  if (why != nullptr)
    *why = "this build has no CUDA support (it was configured without the CUDA toolkit)";
  return false;
}

Status createCudaDevice(int, std::unique_ptr<Device> *) {
  std::string why;
  cudaDeviceAvailable(&why);
  return Status::error("--device cuda: " + why);
}
#endif

} // namespace shardc::runtime
