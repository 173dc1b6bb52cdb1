// dropout on the GPU against the CPU kernel, bit for bit (tolerance 0): the mask and the scaled
// values over odd sizes (a Philox block cut at either end, several thread quads and grid
// strides), ratios from 0 to just below 1, seeds, steps and streams at their extremes, and blocks
// of a split whole tensor (the batch split, and a second split on another mesh axis). Malformed
// calls give the CPU's errors; a step outside [0, 2^32), which only the CPU can report, poisons
// the GPU's output with NaN.
#include "tests/unit/cuda/cuda_compare.h"

#include "runtime/device/device.h"

#include <cmath>
#include <cstring>
#include <memory>

namespace shardc::runtime::testing {
namespace {

using program::BOOL;
using program::F32;
using program::I64;

Operand i64Scalar(int64_t v) { return typed(I64, {}, Fill::fixed({double(v)})); }

KernelCase dropoutCase(const std::vector<int64_t> &shape, int64_t seed, int64_t step, float ratio,
                       int64_t stream) {
  KernelCase c{"dropout", {f32(shape), i64Scalar(seed), i64Scalar(step)},
               {f32(shape), typed(BOOL, shape)}};
  c.attrs.f("ratio", ratio).i("stream", stream);
  c.tolerance = 0;
  return c;
}

TEST(CudaDropout, IsBitIdenticalOverSizesAndRatios) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {7}, {1025}, {4097}, {3, 5, 67}};
  uint32_t seed = 1;
  for (const auto &shape : shapes)
    for (float ratio : {0.0f, 0.1f, 0.5f, 0.9f, 0.9999f}) {
      KernelCase c = dropoutCase(shape, 0x123456789abLL, 5, ratio, 2);
      c.seed = seed++;
      compareWithCpu(c);
    }
}

TEST(CudaDropout, IsBitIdenticalOverSeedsStepsAndStreams) {
  SHARDC_REQUIRE_CUDA();
  uint32_t seed = 1;
  for (int64_t key : {int64_t{0}, int64_t{42}, int64_t{-7}, int64_t{0x7fffffffffffLL}})
    for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{0xFFFFFFFFLL}})
      for (int64_t stream : {int64_t{0}, int64_t{3}, int64_t{0xFFFFFFFELL}}) {
        KernelCase c = dropoutCase({1031}, key, step, 0.3f, stream);
        c.seed = seed++;
        compareWithCpu(c);
      }
}

// A rank's block of the whole tensor [4, 6, 70] draws the whole tensor's mask at its elements:
// cut along one dimension (the batch rows, or the sequence), or along two.
TEST(CudaDropout, BlocksOfASplitTensorAreBitIdentical) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<int64_t> whole = {4, 6, 70};
  uint32_t seed = 1;
  for (int64_t dim : {0, 1, 2})
    for (int64_t offset : {0, 1, 3}) {
      std::vector<int64_t> block = whole;
      block[static_cast<size_t>(dim)] = 2;
      if (offset + 2 > whole[static_cast<size_t>(dim)])
        continue;
      KernelCase c = dropoutCase(block, 99, 2, 0.4f, 3);
      c.attrs.ints("global_shape", whole).i("split_dim", dim).i("split_offset", offset);
      c.seed = seed++;
      compareWithCpu(c);
    }
  for (int64_t blockDim : {1, 2}) {
    std::vector<int64_t> block = {2, 6, 70};
    block[static_cast<size_t>(blockDim)] /= 2;
    KernelCase c = dropoutCase(block, 99, 2, 0.4f, 3);
    c.attrs.ints("global_shape", whole)
        .i("split_dim", 0)
        .i("split_offset", 2)
        .i("block_dim", blockDim)
        .i("block_offset", block[static_cast<size_t>(blockDim)]);
    c.seed = seed++;
    compareWithCpu(c);
  }
  // A one-element-wide block in the middle of the last dimension (every thread quad crosses
  // a cut) and a block whose last dimension is whole but whose middle one is cut to 1.
  KernelCase narrow = dropoutCase({4, 6, 1}, 5, 9, 0.5f, 1);
  narrow.attrs.ints("global_shape", whole).i("block_dim", 2).i("block_offset", 33);
  compareWithCpu(narrow);
  KernelCase middle = dropoutCase({2, 1, 70}, 5, 9, 0.5f, 1);
  middle.attrs.ints("global_shape", whole)
      .i("split_dim", 0)
      .i("split_offset", 1)
      .i("block_dim", 1)
      .i("block_offset", 4);
  compareWithCpu(middle);
}

TEST(CudaDropout, ErrorsAreTheCpuErrors) {
  // Checked before any tensor data is read: no GPU needed.
  for (Attrs attrs : {Attrs().f("ratio", 1.0f).i("stream", 0),
                      Attrs().f("ratio", 0.5f).i("stream", 0xFFFFFFFFLL),
                      Attrs().f("ratio", 0.5f)}) {
    expectSameErrorOnBothDevices(
        "dropout", {typeOnlyTensor(F32, {3, 5}), typeOnlyTensor(I64, {}), typeOnlyTensor(I64, {})},
        {typeOnlyTensor(F32, {3, 5}), typeOnlyTensor(BOOL, {3, 5})}, attrs);
  }
  Attrs attrs;
  attrs.f("ratio", 0.5f).i("stream", 0);
  const std::string message = expectSameErrorOnBothDevices(
      "dropout", {typeOnlyTensor(F32, {3, 5}), typeOnlyTensor(F32, {}), typeOnlyTensor(I64, {})},
      {typeOnlyTensor(F32, {3, 5}), typeOnlyTensor(BOOL, {3, 5})}, attrs);
  EXPECT_NE(message.find("seed is f32, expected i64"), std::string::npos) << message;
}

// The CPU rejects a step outside [0, 2^32); the GPU cannot, and writes NaN and an all-zero mask.
TEST(CudaDropout, AStepOutOfRangePoisonsTheOutput) {
  SHARDC_REQUIRE_CUDA();
  std::unique_ptr<Device> device;
  ASSERT_TRUE(createCudaDevice(0, &device).isOk());
  const int64_t n = 9, seed = 1, step = int64_t{1} << 32;
  const std::vector<float> x(n, 1.0f);
  DeviceBuffer dx, dseed, dstep, dy, dmask;
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), n * 4, "x", &dx).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 8, "seed", &dseed).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 8, "step", &dstep).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), n * 4, "y", &dy).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), n, "mask", &dmask).isOk());
  ASSERT_TRUE(device->copyHostToDevice(dx.data(), x.data(), n * 4).isOk());
  ASSERT_TRUE(device->copyHostToDevice(dseed.data(), &seed, 8).isOk());
  ASSERT_TRUE(device->copyHostToDevice(dstep.data(), &step, 8).isOk());
  ASSERT_TRUE(device->fill(dmask.data(), 1, n).isOk());
  Attrs attrs;
  attrs.f("ratio", 0.5f).i("stream", 0);
  KernelArgs args;
  args.inputs = {{F32, {n}, dx.data()}, {I64, {}, dseed.data()}, {I64, {}, dstep.data()}};
  args.outputs = {{F32, {n}, dy.data()}, {BOOL, {n}, dmask.data()}};
  args.attrs = &attrs.map();
  args.stream = device->defaultStream()->nativeHandle();
  ASSERT_TRUE(findKernel(DeviceKind::Cuda, "dropout")(args).isOk());
  std::vector<float> y(n);
  std::vector<uint8_t> mask(n);
  ASSERT_TRUE(device->copyDeviceToHost(y.data(), dy.data(), n * 4).isOk());
  ASSERT_TRUE(device->copyDeviceToHost(mask.data(), dmask.data(), n).isOk());
  ASSERT_TRUE(device->synchronize().isOk());
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(std::isnan(y[i])) << i;
    EXPECT_EQ(mask[i], 0) << i;
  }
}

} // namespace
} // namespace shardc::runtime::testing
