// gelu_grad, clip, global_norm, scale_by_clip, reduce_max_grad, pad, pad_for_slice, cum_sum and
// scatter_nd on the GPU against the CPU kernels: odd shapes, every attribute variant, and one
// bad call per kernel giving the same error on both devices. All but gelu_grad are claimed
// bit-identical (tolerance 0); gelu_grad uses CUDA's erff/expf (tolerance 1e-5).
#include "tests/unit/cuda/cuda_compare.h"

#include "runtime/device/device.h"

#include <cmath>
#include <memory>
#include <string>

namespace shardc::runtime::testing {
namespace {

using program::BOOL;
using program::F32;
using program::I32;
using program::I64;

Operand anyOf(DType dtype, std::vector<int64_t> shape) {
  if (dtype == BOOL)
    return typed(dtype, std::move(shape), Fill::bools());
  if (dtype == F32)
    return f32(std::move(shape));
  return typed(dtype, std::move(shape), Fill::integers(-100, 100));
}

TEST(CudaMore, GeluGradBothForms) {
  SHARDC_REQUIRE_CUDA();
  for (const char *form : {"none", "tanh"}) {
    KernelCase c{"gelu_grad", {f32({7, 131}), f32({7, 131}, Fill::uniform(-6, 6))}, {f32({7, 131})}};
    c.attrs.s("approximate", form);
    compareWithCpu(c);
    // The limits: huge, infinite and NaN inputs, and zero.
    KernelCase edge{"gelu_grad",
                    {f32({6}, Fill::fixed({1, 1, 1, 1, 1, 1})),
                     f32({6}, Fill::fixed({0, 39.5, -39.5, 1e30, -INFINITY, NAN}))},
                    {f32({6})}};
    edge.attrs.s("approximate", form);
    compareWithCpu(edge);
  }
}

TEST(CudaMore, ClipEveryBoundCombination) {
  SHARDC_REQUIRE_CUDA();
  for (DType dtype : {F32, I64, I32}) {
    const Fill lo = dtype == F32 ? Fill::fixed({-0.5}) : Fill::fixed({-30});
    const Fill hi = dtype == F32 ? Fill::fixed({0.75}) : Fill::fixed({40});
    const std::vector<std::vector<Operand>> inputs = {
        {anyOf(dtype, {5, 37})},
        {anyOf(dtype, {5, 37}), typed(dtype, {}, lo)},
        {anyOf(dtype, {5, 37}), absentOperand(), typed(dtype, {1}, hi)},
        {anyOf(dtype, {5, 37}), typed(dtype, {}, lo), typed(dtype, {}, hi)},
        {anyOf(dtype, {5, 37}), typed(dtype, {}, hi), typed(dtype, {}, lo)}, // lo > hi: all hi
    };
    for (const auto &in : inputs) {
      KernelCase c{"clip", in, {typed(dtype, {5, 37})}};
      c.tolerance = 0;
      compareWithCpu(c);
    }
  }
  // A NaN element stays NaN.
  KernelCase c{"clip",
               {f32({3}, Fill::fixed({NAN, -3, 3})), f32({}, Fill::fixed({-1})),
                f32({}, Fill::fixed({1}))},
               {f32({3})}};
  c.tolerance = 0;
  compareWithCpu(c);
}

TEST(CudaMore, GlobalNormIsBitIdentical) {
  SHARDC_REQUIRE_CUDA();
  // Sizes around the 8-lane body and the 4-element tail, and more than one 64-input chunk.
  std::vector<Operand> inputs;
  for (int64_t n : {1, 3, 4, 5, 7, 8, 9, 12, 13, 15, 16, 17, 1001, 4099})
    inputs.push_back(f32({n}, Fill::uniform(-3, 3)));
  inputs.push_back(f32({0}));
  inputs.push_back(f32({3, 0, 2}));
  inputs.push_back(f32({17, 33}));
  KernelCase c{"global_norm", inputs, {f32({})}};
  c.tolerance = 0;
  compareWithCpu(c);
  std::vector<Operand> many;
  for (int i = 0; i < 150; ++i)
    many.push_back(f32({i % 11 + 1}));
  KernelCase d{"global_norm", many, {f32({})}};
  d.tolerance = 0;
  compareWithCpu(d);
}

TEST(CudaMore, ScaleByClipIsBitIdentical) {
  SHARDC_REQUIRE_CUDA();
  // A norm above max_norm (scaled), below it (coefficient clamped to 1), zero, and NaN.
  for (double norm : {7.3, 0.25, 0.0, double(NAN)}) {
    KernelCase c{"scale_by_clip", {f32({9, 61}), f32({}, Fill::fixed({norm}))}, {f32({9, 61})}};
    c.attrs.f("max_norm", 1.0f);
    c.tolerance = 0;
    compareWithCpu(c);
  }
}

TEST(CudaMore, ReduceMaxGradSplitsTies) {
  SHARDC_REQUIRE_CUDA();
  struct Case {
    std::vector<int64_t> axes;
    int64_t keepdims;
    std::vector<int64_t> yShape;
  };
  const std::vector<int64_t> xShape = {3, 5, 7};
  const std::vector<Case> cases = {{{1}, 1, {3, 1, 7}}, {{0, 2}, 0, {5}}, {{0, 1, 2}, 0, {}},
                                   {{2}, 0, {3, 5}}};
  for (const Case &k : cases) {
    // Small integers as floats, so ties are common: x cycles through 0..4 along every dim
    // (37 i mod 5 along any reduced group here), so every group holds a 4, its maximum y.
    std::vector<double> xs;
    for (int i = 0; i < 105; ++i)
      xs.push_back(double((i * 37) % 5));
    int64_t yCount = 1;
    for (int64_t d : k.yShape)
      yCount *= d;
    const std::vector<double> ys(static_cast<size_t>(yCount), 4.0);
    KernelCase c{"reduce_max_grad",
                 {f32(k.yShape), f32(xShape, Fill::fixed(xs)), f32(k.yShape, Fill::fixed(ys))},
                 {f32(xShape)}};
    c.attrs.ints("axes", k.axes).i("keepdims", k.keepdims);
    c.tolerance = 0;
    compareWithCpu(c);
  }
}

TEST(CudaMore, PadEveryDtypeWithCrops) {
  SHARDC_REQUIRE_CUDA();
  struct Case {
    std::vector<int64_t> pads, out;
  };
  const std::vector<Case> cases = {
      {{1, 0, 2, 3, 1, 0}, {7, 6, 7}},     // pads only
      {{-1, 2, 0, 0, -3, 1}, {2, 4, 6}},   // crops and pads
      {{0, 0, 0, 0, 0, 0}, {3, 5, 5}},     // unchanged
      {{-3, 0, 0, 0, 0, 0}, {0, 5, 5}},    // empty y
      {{0, -5, 0, 0, 2, 0}, {3, 2, 5}},    // x cropped away on dim 1: y all fill
  };
  for (DType dtype : {F32, I64, I32, BOOL})
    for (const Case &p : cases) {
      KernelCase c{"pad", {anyOf(dtype, {3, 5, 5})}, {typed(dtype, p.out)}};
      c.attrs.ints("pads", p.pads).d("value", dtype == BOOL ? 1.0 : -7.5);
      c.tolerance = 0;
      compareWithCpu(c);
    }
  KernelCase scalar{"pad", {f32({})}, {f32({})}};
  scalar.attrs.ints("pads", {}).d("value", 0.0);
  scalar.tolerance = 0;
  compareWithCpu(scalar);
}

TEST(CudaMore, PadForSliceStepsBothWays) {
  SHARDC_REQUIRE_CUDA();
  struct Case {
    std::vector<int64_t> starts, steps, dy;
  };
  const std::vector<Case> cases = {
      {{6, 1, 0}, {-2, 3, 1}, {4, 3, 5}},
      {{0, 8, 4}, {3, -1, -4}, {3, 9, 2}},
      {{2, 0, 1}, {1, 1, 1}, {3, 9, 3}},
      {{5, 4, 2}, {100, -100, 7}, {1, 1, 1}},
  };
  for (DType dtype : {F32, I64, BOOL})
    for (const Case &s : cases) {
      KernelCase c{"pad_for_slice", {anyOf(dtype, s.dy)}, {typed(dtype, {7, 9, 5})}};
      c.attrs.ints("starts", s.starts).ints("steps", s.steps);
      c.tolerance = 0;
      compareWithCpu(c);
    }
}

TEST(CudaMore, CumSumEveryAxisAndFlag) {
  SHARDC_REQUIRE_CUDA();
  for (DType dtype : {F32, I64, I32})
    for (int64_t axis = 0; axis < 3; ++axis)
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          KernelCase c{"cum_sum", {anyOf(dtype, {4, 33, 5})}, {typed(dtype, {4, 33, 5})}};
          c.attrs.i("axis", axis).i("exclusive", exclusive).i("reverse", reverse);
          c.tolerance = 0;
          compareWithCpu(c);
        }
  // A long row, where float sums in another order would differ.
  KernelCase c{"cum_sum", {f32({3, 5003}, Fill::uniform(-1, 100))}, {f32({3, 5003})}};
  c.attrs.i("axis", 1).i("exclusive", 0).i("reverse", 0);
  c.tolerance = 0;
  compareWithCpu(c);
}

TEST(CudaMore, ScatterNdEveryReductionWithRepeats) {
  SHARDC_REQUIRE_CUDA();
  // Tuples of length 1 and 2 into [6, 4, 3] data, with repeated and negative indices.
  const std::vector<double> rows = {1, 4, -5, 1, 0, 5, 4};           // 1 and -5 are one row
  const std::vector<double> pairs = {0, 1, 5, 3, 0, 1, -6, -3, 2, 2}; // (0,1) three times
  for (const char *reduction : {"none", "add", "mul", "max", "min"})
    for (DType dtype : {F32, I64, I32, BOOL}) {
      if (dtype == BOOL && std::string(reduction) != "none")
        continue;
      for (DType indexType : {I64, I32}) {
        KernelCase c{"scatter_nd",
                     {anyOf(dtype, {6, 4, 3}), typed(indexType, {7, 1}, Fill::fixed(rows)),
                      anyOf(dtype, {7, 4, 3})},
                     {typed(dtype, {6, 4, 3})}};
        c.attrs.s("reduction", reduction);
        c.tolerance = 0;
        compareWithCpu(c);
        KernelCase d{"scatter_nd",
                     {anyOf(dtype, {6, 4, 3}), typed(indexType, {5, 2}, Fill::fixed(pairs)),
                      anyOf(dtype, {5, 3})},
                     {typed(dtype, {6, 4, 3})}};
        d.attrs.s("reduction", reduction);
        d.tolerance = 0;
        compareWithCpu(d);
      }
    }
  // Full-rank tuples (slices of one element), indices of rank 3.
  KernelCase e{"scatter_nd",
               {f32({6, 4}), typed(I64, {2, 2, 2}, Fill::fixed({5, 3, 0, 0, 5, 3, 1, 2})),
                f32({2, 2})},
               {f32({6, 4})}};
  e.attrs.s("reduction", "add");
  e.tolerance = 0;
  compareWithCpu(e);
}

// One bad call per kernel: the checks are shared, so the message is the CPU's. These fail
// before touching any memory, so they need no GPU.
TEST(CudaMore, BadCallsGiveTheCpuErrors) {
  struct BadCase {
    const char *kernel;
    std::vector<Tensor> inputs, outputs;
    Attrs attrs;
  };
  std::vector<BadCase> cases;
  cases.push_back({"gelu_grad", {typeOnlyTensor(F32, {2, 3}), typeOnlyTensor(F32, {2, 3})},
                   {typeOnlyTensor(F32, {2, 3})}, Attrs().s("approximate", "exact")});
  cases.push_back({"clip", {typeOnlyTensor(F32, {2, 3}), typeOnlyTensor(F32, {2})},
                   {typeOnlyTensor(F32, {2, 3})}, Attrs()});
  cases.push_back({"global_norm", {typeOnlyTensor(F32, {2}), typeOnlyTensor(I32, {3})},
                   {typeOnlyTensor(F32, {})}, Attrs()});
  cases.push_back({"scale_by_clip", {typeOnlyTensor(F32, {2}), typeOnlyTensor(F32, {1})},
                   {typeOnlyTensor(F32, {2})}, Attrs().f("max_norm", 1.0f)});
  cases.push_back({"reduce_max_grad",
                   {typeOnlyTensor(F32, {2}), typeOnlyTensor(F32, {2, 3}),
                    typeOnlyTensor(F32, {2})},
                   {typeOnlyTensor(F32, {2, 3})}, Attrs().ints("axes", {1, 1}).i("keepdims", 0)});
  cases.push_back({"pad", {typeOnlyTensor(F32, {2, 3})}, {typeOnlyTensor(F32, {3, 3})},
                   Attrs().ints("pads", {1, 0, 1, 0}).d("value", 0.0)});
  cases.push_back({"pad_for_slice", {typeOnlyTensor(F32, {2, 3})}, {typeOnlyTensor(F32, {2, 4})},
                   Attrs().ints("starts", {0, 2}).ints("steps", {1, 1})});
  cases.push_back({"cum_sum", {typeOnlyTensor(F32, {2, 3})}, {typeOnlyTensor(F32, {2, 3})},
                   Attrs().i("axis", 2).i("exclusive", 0).i("reverse", 0)});
  cases.push_back({"scatter_nd",
                   {typeOnlyTensor(F32, {4, 3}), typeOnlyTensor(I64, {2, 1}),
                    typeOnlyTensor(F32, {2, 3})},
                   {typeOnlyTensor(F32, {4, 3})}, Attrs().s("reduction", "sum")});
  for (const BadCase &bad : cases)
    expectSameErrorOnBothDevices(bad.kernel, bad.inputs, bad.outputs, bad.attrs);
}

// An out-of-range index is the CPU's error: the CUDA kernel checks the indices on the host
// (copied back) before writing anything, reading nothing out of bounds.
TEST(CudaMore, ScatterNdOutOfRangeIndexIsTheCpuError) {
  SHARDC_REQUIRE_CUDA();
  std::unique_ptr<Device> device;
  ASSERT_TRUE(createCudaDevice(0, &device).isOk());
  const std::vector<int64_t> indices = {1, 4, 2};
  DeviceBuffer data, index, updates, out, workspace;
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 4 * 2 * sizeof(float), "data", &data).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 3 * sizeof(int64_t), "indices", &index).isOk());
  ASSERT_TRUE(
      DeviceBuffer::allocate(device.get(), 3 * 2 * sizeof(float), "updates", &updates).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), 4 * 2 * sizeof(float), "y", &out).isOk());
  ASSERT_TRUE(device->copyHostToDevice(index.data(), indices.data(), 3 * sizeof(int64_t)).isOk());
  ASSERT_TRUE(device->fill(data.data(), 0, 4 * 2 * sizeof(float)).isOk());
  ASSERT_TRUE(device->fill(updates.data(), 0, 3 * 2 * sizeof(float)).isOk());
  Attrs attrs;
  attrs.s("reduction", "none");
  KernelArgs args;
  args.inputs = {Tensor{F32, {4, 2}, data.data()}, Tensor{I64, {3, 1}, index.data()},
                 Tensor{F32, {3, 2}, updates.data()}};
  args.outputs = {Tensor{F32, {4, 2}, out.data()}};
  args.attrs = &attrs.map();
  uint64_t bytes = 0;
  ASSERT_TRUE(kernelWorkspaceBytes(DeviceKind::Cuda, "scatter_nd", args, &bytes).isOk());
  ASSERT_TRUE(DeviceBuffer::allocate(device.get(), bytes, "workspace", &workspace).isOk());
  args.workspace = workspace.data();
  args.workspaceBytes = bytes;
  args.stream = device->defaultStream()->nativeHandle();
  const Status got = findKernel(DeviceKind::Cuda, "scatter_nd")(args);

  std::vector<float> hostData(8, 0.0f), hostUpdates(6, 0.0f), hostOut(8);
  KernelArgs cpuArgs;
  cpuArgs.inputs = {Tensor{F32, {4, 2}, hostData.data()},
                    Tensor{I64, {3, 1}, const_cast<int64_t *>(indices.data())},
                    Tensor{F32, {3, 2}, hostUpdates.data()}};
  cpuArgs.outputs = {Tensor{F32, {4, 2}, hostOut.data()}};
  cpuArgs.attrs = &attrs.map();
  const Status want = findKernel(DeviceKind::Cpu, "scatter_nd")(cpuArgs);
  ASSERT_FALSE(want.isOk());
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(want.message(), got.message());
  EXPECT_TRUE(device->synchronize().isOk());
}

} // namespace
} // namespace shardc::runtime::testing
