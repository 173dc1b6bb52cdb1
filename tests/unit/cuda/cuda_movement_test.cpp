// The data-movement CUDA kernels against the CPU kernels: every perm of a rank-4 transpose,
// reversed and stepped slices, concat and split on every axis, broadcasts, gather and its
// backward with index blocks and repeated indices, and every element size (bool, bf16, f32,
// i64). Movement is exact, and so is gather_grad (the same additions in the same order).
#include "tests/unit/cuda/cuda_compare.h"

#include "runtime/device/device.h"

#include <algorithm>
#include <memory>

namespace shardc::runtime::testing {
namespace {

using program::BF16;
using program::BOOL;
using program::F32;
using program::I32;
using program::I64;

// An operand of `dtype` with values that suit it.
Operand anyOf(DType dtype, std::vector<int64_t> shape) {
  if (dtype == BOOL)
    return typed(dtype, std::move(shape), Fill::bools());
  if (dtype == F32)
    return f32(std::move(shape));
  return typed(dtype, std::move(shape), Fill::integers(-100, 100));
}

const std::vector<DType> kElementSizes = {BOOL, BF16, F32, I64};

TEST(CudaMovement, CopyMovesEveryElementSize) {
  SHARDC_REQUIRE_CUDA();
  for (DType dtype : kElementSizes) {
    KernelCase c{"copy", {anyOf(dtype, {3, 5, 7})}, {typed(dtype, {105})}};
    c.tolerance = 0;
    compareWithCpu(c);
  }
}

TEST(CudaMovement, TransposeEveryPermOfRank4) {
  SHARDC_REQUIRE_CUDA();
  std::vector<int64_t> perm = {0, 1, 2, 3};
  const std::vector<int64_t> shape = {2, 3, 5, 7};
  int n = 0;
  do {
    std::vector<int64_t> out;
    for (int64_t p : perm)
      out.push_back(shape[static_cast<size_t>(p)]);
    const DType dtype = kElementSizes[static_cast<size_t>(n++) % kElementSizes.size()];
    KernelCase c{"transpose", {anyOf(dtype, shape)}, {typed(dtype, out)}};
    c.attrs.ints("perm", perm);
    c.tolerance = 0;
    compareWithCpu(c);
  } while (std::next_permutation(perm.begin(), perm.end()));
  // A large odd one (more than one grid's worth of blocks is not needed: grid-stride loops).
  KernelCase c{"transpose", {f32({67, 129})}, {f32({129, 67})}};
  c.attrs.ints("perm", {1, 0});
  c.tolerance = 0;
  compareWithCpu(c);
}

TEST(CudaMovement, SliceWithNegativeAndLargeSteps) {
  SHARDC_REQUIRE_CUDA();
  struct SliceCase {
    std::vector<int64_t> starts, steps, out;
  };
  const std::vector<SliceCase> cases = {
      {{6, 1, 0}, {-2, 3, 1}, {4, 3, 5}}, // dim 0 reversed, dim 1 stepped
      {{0, 8, 4}, {3, -1, -4}, {3, 9, 2}},
      {{2, 0, 1}, {1, 1, 1}, {3, 9, 3}}, // a plain window
      {{5, 4, 2}, {100, -100, 7}, {1, 1, 1}},
  };
  for (DType dtype : kElementSizes)
    for (const SliceCase &s : cases) {
      KernelCase c{"slice", {anyOf(dtype, {7, 9, 5})}, {typed(dtype, s.out)}};
      c.attrs.ints("starts", s.starts).ints("steps", s.steps);
      c.tolerance = 0;
      compareWithCpu(c);
    }
}

TEST(CudaMovement, ExpandBroadcasts) {
  SHARDC_REQUIRE_CUDA();
  for (DType dtype : kElementSizes) {
    KernelCase a{"expand", {anyOf(dtype, {3, 1, 5})}, {typed(dtype, {2, 3, 4, 5})}};
    a.tolerance = 0;
    compareWithCpu(a);
    KernelCase b{"expand", {anyOf(dtype, {})}, {typed(dtype, {4, 3})}};
    b.tolerance = 0;
    compareWithCpu(b);
  }
}

TEST(CudaMovement, ConcatAndSplitOnEveryAxis) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<int64_t> base = {3, 4, 5};
  const std::vector<int64_t> sizes = {2, 1, 3};
  for (DType dtype : kElementSizes)
    for (int64_t axis = 0; axis < 3; ++axis) {
      std::vector<Operand> parts;
      std::vector<Operand> partOutputs;
      std::vector<int64_t> whole = base;
      whole[static_cast<size_t>(axis)] = 6;
      for (int64_t size : sizes) {
        std::vector<int64_t> shape = base;
        shape[static_cast<size_t>(axis)] = size;
        parts.push_back(anyOf(dtype, shape));
        partOutputs.push_back(typed(dtype, shape));
      }
      KernelCase concat{"concat", parts, {typed(dtype, whole)}};
      concat.attrs.i("axis", axis);
      concat.tolerance = 0;
      compareWithCpu(concat);
      KernelCase split{"split", {anyOf(dtype, whole)}, partOutputs};
      split.attrs.i("axis", axis).ints("sizes", sizes);
      split.tolerance = 0;
      compareWithCpu(split);
    }
}

TEST(CudaMovement, TriluBothTrianglesAndDiagonals) {
  SHARDC_REQUIRE_CUDA();
  for (int64_t upper : {0, 1})
    for (int64_t k : {-3, -1, 0, 2, 9}) {
      KernelCase c{"trilu", {f32({2, 5, 7})}, {f32({2, 5, 7})}};
      c.attrs.i("upper", upper).i("k", k);
      c.tolerance = 0;
      compareWithCpu(c);
    }
}

TEST(CudaMovement, GatherWithNegativeIndicesAndIndexBlocks) {
  SHARDC_REQUIRE_CUDA();
  for (DType dtype : kElementSizes) {
    // Axis 0 (an embedding lookup) with i64 indices, negatives counted from the end.
    KernelCase rows{"gather",
                    {anyOf(dtype, {7, 6}), typed(I64, {2, 5}, Fill::integers(-7, 6))},
                    {typed(dtype, {2, 5, 6})}};
    rows.attrs.i("axis", 0);
    rows.tolerance = 0;
    compareWithCpu(rows);
    // A middle axis with i32 indices.
    KernelCase middle{"gather",
                      {anyOf(dtype, {3, 7, 4}), typed(I32, {5}, Fill::integers(-7, 6))},
                      {typed(dtype, {3, 5, 4})}};
    middle.attrs.i("axis", 1);
    middle.tolerance = 0;
    compareWithCpu(middle);
  }
  // Each device's block of a dimension of 7: the indices address the whole dimension.
  for (const auto &split : kIndexBlockSplitsOf7) {
    int64_t offset = 0;
    for (int64_t size : split) {
      KernelCase c{"gather",
                   {f32({size, 6}), typed(I64, {3, 4}, Fill::integers(-7, 6))},
                   {f32({3, 4, 6})}};
      c.attrs = withIndexBlock(Attrs().i("axis", 0), offset, 7);
      c.tolerance = 0;
      compareWithCpu(c);
      offset += size;
    }
  }
}

TEST(CudaMovement, GatherGradAddsRepeatedIndicesInOrder) {
  SHARDC_REQUIRE_CUDA();
  // Many repeats (indices in [0, 3] over 40 positions) and odd sizes; exact: the CUDA kernel
  // adds each row's contributions in index order, as the CPU.
  KernelCase rows{"gather_grad",
                  {f32({8, 5, 33}), typed(I64, {8, 5}, Fill::integers(-7, 3))},
                  {f32({7, 33})}};
  rows.attrs.i("axis", 0);
  rows.tolerance = 0;
  compareWithCpu(rows);
  KernelCase middle{"gather_grad",
                    {f32({3, 9, 4}), typed(I32, {9}, Fill::integers(0, 2))},
                    {f32({3, 7, 4})}};
  middle.attrs.i("axis", 1);
  middle.tolerance = 0;
  compareWithCpu(middle);
  for (const auto &split : kIndexBlockSplitsOf7) {
    int64_t offset = 0;
    for (int64_t size : split) {
      KernelCase c{"gather_grad",
                   {f32({6, 4, 5}), typed(I64, {6, 4}, Fill::integers(-7, 6))},
                   {f32({size, 5})}};
      c.attrs = withIndexBlock(Attrs().i("axis", 0), offset, 7);
      c.tolerance = 0;
      compareWithCpu(c);
      offset += size;
    }
  }
}

// The operand checks are shared, so a bad attribute is the same error on both devices. These
// calls fail before touching any memory, so they need no GPU.
TEST(CudaMovement, BadAttributesGiveTheCpuErrors) {
  const Tensor x = typeOnlyTensor(F32, {2, 3, 4});
  struct BadCase {
    const char *kernel;
    Tensor y;
    Attrs attrs;
  };
  std::vector<BadCase> cases;
  cases.push_back({"transpose", typeOnlyTensor(F32, {4, 3, 2}), Attrs().ints("perm", {2, 1, 1})});
  cases.push_back({"slice", typeOnlyTensor(F32, {2, 3, 4}),
                   Attrs().ints("starts", {0, 1, 0}).ints("steps", {1, 1, 1})});
  cases.push_back({"concat", typeOnlyTensor(F32, {2, 3, 5}), Attrs().i("axis", 2)});
  for (const BadCase &bad : cases)
    expectSameErrorOnBothDevices(bad.kernel, {x}, {bad.y}, bad.attrs);
}

// An out-of-range index is an error on the CPU; the CUDA kernel checks the indices on the host
// (copied back) and reports the same error, reading nothing out of bounds.
TEST(CudaMovement, OutOfRangeIndexIsTheCpuError) {
  SHARDC_REQUIRE_CUDA();
  std::unique_ptr<Device> device;
  ASSERT_TRUE(createCudaDevice(0, &device).isOk());
  const std::vector<int64_t> indices = {1, 7, 2};
  DeviceBuffer data, index, out, workspace;
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 7 * 2 * sizeof(float), "data", &data).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 3 * sizeof(int64_t), "indices", &index).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 3 * 2 * sizeof(float), "y", &out).isOk());
  ASSERT_TRUE(device->copyHostToDevice(index.data(), indices.data(), 3 * sizeof(int64_t)).isOk());
  ASSERT_TRUE(device->fill(data.data(), 0, 7 * 2 * sizeof(float)).isOk());
  Attrs attrs;
  attrs.i("axis", 0);
  KernelArgs args;
  args.inputs = {Tensor{F32, {7, 2}, data.data()}, Tensor{I64, {3}, index.data()}};
  args.outputs = {Tensor{F32, {3, 2}, out.data()}};
  args.attrs = &attrs.map();
  uint64_t bytes = 0;
  ASSERT_TRUE(kernelWorkspaceBytes(DeviceKind::Cuda, "gather", args, &bytes).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), bytes, "workspace", &workspace).isOk());
  args.workspace = workspace.data();
  args.workspaceBytes = bytes;
  args.stream = device->defaultStream()->nativeHandle();
  const Status got = findKernel(DeviceKind::Cuda, "gather")(args);

  std::vector<float> hostData(14, 0.0f), hostOut(6);
  std::vector<int64_t> rows(3);
  KernelArgs cpuArgs;
  cpuArgs.inputs = {Tensor{F32, {7, 2}, hostData.data()},
                    Tensor{I64, {3}, const_cast<int64_t *>(indices.data())}};
  cpuArgs.outputs = {Tensor{F32, {3, 2}, hostOut.data()}};
  cpuArgs.attrs = &attrs.map();
  cpuArgs.workspace = rows.data();
  cpuArgs.workspaceBytes = rows.size() * sizeof(int64_t);
  const Status want = findKernel(DeviceKind::Cpu, "gather")(cpuArgs);
  ASSERT_FALSE(want.isOk());
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(want.message(), got.message());
  EXPECT_TRUE(device->synchronize().isOk());
}

} // namespace
} // namespace shardc::runtime::testing
