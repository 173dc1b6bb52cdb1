// The device layer: the cpu device everywhere, the cuda device where a GPU is visible (each
// cuda test skips, saying why, elsewhere). The same checks run on both: memory counted exactly,
// copies in every direction through streams ordered by events, fills, and errors as Status.
#include "runtime/device/device.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/memory_tracker.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace shardc::runtime {
namespace {

TEST(DeviceChoice, ParsesTheThreeChoicesAndNamesThemInTheError) {
  DeviceChoice choice;
  ASSERT_TRUE(parseDeviceChoice("cpu", &choice).isOk());
  EXPECT_EQ(choice, DeviceChoice::Cpu);
  ASSERT_TRUE(parseDeviceChoice("cuda", &choice).isOk());
  EXPECT_EQ(choice, DeviceChoice::Cuda);
  ASSERT_TRUE(parseDeviceChoice("auto", &choice).isOk());
  EXPECT_EQ(choice, DeviceChoice::Auto);
  const Status bad = parseDeviceChoice("gpu", &choice);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.message(), "unknown device 'gpu' (expected cpu, cuda or auto)");
}

TEST(DeviceChoice, AutoIsCudaExactlyWhenAGpuIsVisible) {
  std::unique_ptr<Device> device;
  ASSERT_TRUE(createDevice(DeviceChoice::Auto, 0, &device).isOk());
  std::string why;
  EXPECT_EQ(device->kind(), cudaDeviceAvailable(&why) ? DeviceKind::Cuda : DeviceKind::Cpu) << why;
}

TEST(DeviceChoice, CudaIsTheGpuOrOneClearError) {
  std::string why;
  std::unique_ptr<Device> device;
  const Status status = createDevice(DeviceChoice::Cuda, 0, &device);
  if (cudaDeviceAvailable(&why)) {
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(device->kind(), DeviceKind::Cuda);
    return;
  }
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "--device cuda: " + why);
  EXPECT_EQ(status.message().find('\n'), std::string::npos);
}

// The checks both devices must pass.
void exerciseDevice(Device &device) {
  const DeviceMemoryCounters before = device.memoryCounters();
  DeviceBuffer a, b;
  ASSERT_TRUE(DeviceBuffer::allocate(&device, 4001 * sizeof(float), "a", &a).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(&device, 4001 * sizeof(float), "b", &b).isOk());
  // As the device's kernels need: 256 bytes on CUDA, the host allocator's 64 on the CPU.
  const uintptr_t alignment = device.kind() == DeviceKind::Cuda ? 256 : kBufferAlignment;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % alignment, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % alignment, 0u);
  EXPECT_EQ(device.memoryCounters().inUse - before.inUse, 2 * 4001 * sizeof(float));

  // host -> a on one stream; a -> b on a second stream once an event says the first is done;
  // b -> host on the second.
  std::vector<float> source(4001), back(4001, -1.0f);
  std::iota(source.begin(), source.end(), 0.5f);
  std::unique_ptr<DeviceStream> second;
  std::unique_ptr<DeviceEvent> uploaded;
  ASSERT_TRUE(device.createStream(&second).isOk());
  ASSERT_TRUE(device.createEvent(&uploaded).isOk());
  ASSERT_TRUE(device.copyHostToDevice(a.data(), source.data(), 4001 * sizeof(float)).isOk());
  ASSERT_TRUE(device.recordEvent(uploaded.get(), device.defaultStream()).isOk());
  ASSERT_TRUE(device.waitEvent(second.get(), uploaded.get()).isOk());
  ASSERT_TRUE(device.copyDeviceToDevice(b.data(), a.data(), 4001 * sizeof(float), second.get()).isOk());
  ASSERT_TRUE(device.copyDeviceToHost(back.data(), b.data(), 4001 * sizeof(float), second.get()).isOk());
  ASSERT_TRUE(device.synchronize(second.get()).isOk());
  EXPECT_EQ(source, back);

  // fill, then a partial download.
  ASSERT_TRUE(device.fill(a.data(), 0, 16 * sizeof(float)).isOk());
  ASSERT_TRUE(device.copyDeviceToHost(back.data(), a.data(), 17 * sizeof(float)).isOk());
  ASSERT_TRUE(device.synchronize().isOk());
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(back[i], 0.0f);
  EXPECT_EQ(back[16], 16.5f);

  // Zero bytes: a unique address, counted as zero.
  DeviceBuffer empty;
  ASSERT_TRUE(DeviceBuffer::allocate(&device, 0, "empty", &empty).isOk());
  EXPECT_NE(empty.data(), nullptr);
  EXPECT_NE(empty.data(), a.data());

  // Pinned host memory is not device memory.
  void *host = nullptr;
  const uint64_t inUse = device.memoryCounters().inUse;
  ASSERT_TRUE(device.allocateHost(1 << 20, "staging", &host).isOk());
  EXPECT_EQ(device.memoryCounters().inUse, inUse);
  device.freeHost(host);

  a.reset();
  b.reset();
  empty.reset();
  const DeviceMemoryCounters after = device.memoryCounters();
  EXPECT_EQ(after.inUse, before.inUse);
  EXPECT_EQ(after.peak - before.inUse, 2 * 4001 * sizeof(float));
  EXPECT_EQ(after.allocations - before.allocations, 3u);
}

TEST(CpuDevice, CountsCopiesAndOrdersLikeAnyDevice) {
  std::unique_ptr<Device> device = createCpuDevice();
  EXPECT_EQ(device->kind(), DeviceKind::Cpu);
  EXPECT_TRUE(device->addressesHostMemory());
  EXPECT_EQ(device->defaultStream()->nativeHandle(), nullptr);
  exerciseDevice(*device);
}

// Its memory is host memory from AlignedBuffer: zeroed, and counted by the tracker of the
// scope it was allocated in, rounded as the plan rounds, until it is freed.
TEST(CpuDevice, AllocationsAreZeroedAndCountedByTheActiveTracker) {
  std::unique_ptr<Device> device = createCpuDevice();
  MemoryTracker tracker;
  DeviceBuffer arena;
  {
    MemoryScope scope(&tracker, MemoryUse::Arena);
    ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 100, "the arena", &arena).isOk());
  }
  const auto *bytes = static_cast<const unsigned char *>(arena.data());
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(bytes[i], 0) << i;
  EXPECT_EQ(tracker.liveByUse()[static_cast<size_t>(MemoryUse::Arena)],
            AlignedBuffer::allocationSize(100));
  EXPECT_EQ(device->memoryCounters().inUse, 100u);
  arena.reset();
  EXPECT_EQ(tracker.liveBytes(), 0u);
  EXPECT_EQ(device->memoryCounters().inUse, 0u);
}

TEST(CudaDevice, CountsCopiesAndOrdersLikeAnyDevice) {
  std::string why;
  if (!cudaDeviceAvailable(&why))
    GTEST_SKIP() << why;
  std::unique_ptr<Device> device;
  ASSERT_TRUE(createCudaDevice(0, &device).isOk());
  EXPECT_EQ(device->kind(), DeviceKind::Cuda);
  EXPECT_NE(device->describe().find("cuda:0 ("), std::string::npos) << device->describe();
  exerciseDevice(*device);
}

TEST(CudaDevice, OutOfMemoryAndBadOrdinalsAreErrorsNotCrashes) {
  std::string why;
  if (!cudaDeviceAvailable(&why))
    GTEST_SKIP() << why;
  std::unique_ptr<Device> device;
  const Status badOrdinal = createCudaDevice(4096, &device);
  ASSERT_FALSE(badOrdinal.isOk());
  EXPECT_NE(badOrdinal.message().find("cuda device 4096 does not exist"), std::string::npos)
      << badOrdinal.message();
  ASSERT_TRUE(createCudaDevice(0, &device).isOk());
  void *p = nullptr;
  const Status huge = device->allocate(size_t(1) << 52, "the arena", &p);
  ASSERT_FALSE(huge.isOk());
  EXPECT_NE(huge.message().find("out of device memory allocating the arena"), std::string::npos)
      << huge.message();
  EXPECT_EQ(device->memoryCounters().inUse, 0u);
  // The device still works after the failure.
  exerciseDevice(*device);
}

} // namespace
} // namespace shardc::runtime
