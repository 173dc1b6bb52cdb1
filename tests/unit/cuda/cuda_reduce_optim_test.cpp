// The reductions and optimizer updates on the GPU against the CPU kernels: every axis set of a
// rank-4 tensor with and without keepdims; AdamW and SGD bit for bit (tolerance 0) over several
// steps' hyperparameters, updated in place as the compiler aliases them.
#include "tests/unit/cuda/cuda_compare.h"

namespace shardc::runtime::testing {
namespace {

using program::F32;
using program::I32;
using program::I64;

TEST(CudaReduce, EveryAxisSetWithAndWithoutKeepdims) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<int64_t> shape = {3, 4, 5, 7};
  for (int mask = 1; mask < 16; ++mask)
    for (int64_t keepdims : {0, 1}) {
      std::vector<int64_t> axes, out;
      for (int64_t d = 0; d < 4; ++d) {
        const bool reduced = (mask >> d) & 1;
        if (reduced)
          axes.push_back(d);
        if (!reduced)
          out.push_back(shape[static_cast<size_t>(d)]);
        else if (keepdims)
          out.push_back(1);
      }
      for (const char *kernel : {"reduce_sum", "reduce_mean", "reduce_max"}) {
        KernelCase c{kernel, {f32(shape)}, {f32(out)}};
        c.attrs.ints("axes", axes).i("keepdims", keepdims);
        c.seed = static_cast<uint32_t>(mask * 2 + keepdims);
        compareWithCpu(c); // tolerance 1e-5 (the additions are the CPU's, so in fact exact)
      }
      for (DType dtype : {I64, I32})
        for (const char *kernel : {"reduce_sum", "reduce_mean", "reduce_max"}) {
          KernelCase c{kernel, {typed(dtype, shape, Fill::integers(-1000, 1000))}, {typed(dtype, out)}};
          c.attrs.ints("axes", axes).i("keepdims", keepdims);
          compareWithCpu(c);
        }
    }
  // A long reduction (a bias gradient over many rows).
  KernelCase c{"reduce_sum", {f32({2049, 3})}, {f32({3})}};
  c.attrs.ints("axes", {0}).i("keepdims", 0);
  compareWithCpu(c);
}

TEST(CudaReduce, ArgMaxMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  // Every axis of a 4-D tensor, both flags, f32 with ties (integers stored as floats) and i64.
  const std::vector<int64_t> shape = {3, 4, 5, 7};
  for (int64_t axis = 0; axis < 4; ++axis)
    for (int64_t keepdims : {0, 1})
      for (int64_t last : {0, 1}) {
        std::vector<int64_t> out;
        for (int64_t d = 0; d < 4; ++d)
          if (d != axis)
            out.push_back(shape[static_cast<size_t>(d)]);
          else if (keepdims)
            out.push_back(1);
        for (DType dtype : {F32, I64}) {
          KernelCase c{"arg_max", {typed(dtype, shape, Fill::integers(-3, 3))}, {typed(I64, out)}};
          c.attrs.i("axis", axis).i("keepdims", keepdims).i("select_last_index", last);
          compareWithCpu(c);
        }
      }
}

TEST(CudaReduce, ErrorsAreTheCpuErrors) {
  // Checked before any device access: no GPU needed.
  Attrs attrs;
  attrs.ints("axes", {1, 0}).i("keepdims", 0);
  expectSameErrorOnBothDevices("reduce_sum", {typeOnlyTensor(F32, {2, 3})},
                               {typeOnlyTensor(F32, {})}, attrs);
}

Operand stepOf(int64_t step) { return typed(I64, {}, Fill::fixed({double(step)})); }
Operand scalar(double v) { return f32({}, Fill::fixed({v})); }

TEST(CudaOptimizers, AdamwIsBitIdenticalInPlace) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<int64_t> shape = {37, 29};
  uint32_t seed = 1;
  for (int64_t step : {1, 2, 3, 10, 1000})
    for (double weightDecay : {0.0, 0.01})
      for (int skip : {-1, 0, 1}) { // -1: no skip input
        KernelCase c{"adamw_update",
                     {f32(shape), f32(shape, Fill::uniform(-1, 1)), f32(shape, Fill::uniform(-0.1, 0.1)),
                      f32(shape, Fill::uniform(0, 0.01)), stepOf(step), scalar(1e-3)},
                     {f32(shape), f32(shape), f32(shape)}};
        if (skip >= 0)
          c.inputs.push_back(scalar(skip));
        c.attrs.d("beta1", 0.9).d("beta2", 0.999).d("eps", 1e-8).d("weight_decay", weightDecay);
        c.inPlace = {{0, 0}, {2, 1}, {3, 2}};
        c.tolerance = 0;
        c.seed = seed++;
        compareWithCpu(c);
      }
}

TEST(CudaOptimizers, SgdIsBitIdenticalInPlace) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<int64_t> shape = {1031};
  uint32_t seed = 1;
  for (int64_t step : {1, 2, 7})
    for (double momentum : {0.0, 0.9})
      for (double dampening : {0.0, 0.1})
        for (double weightDecay : {0.0, 1e-4})
          for (int64_t nesterov : {0, 1})
            for (int skip : {-1, 1}) {
              KernelCase c{"sgd_update",
                           {f32(shape), f32(shape), f32(shape), stepOf(step), scalar(0.05)},
                           {f32(shape), f32(shape)}};
              if (skip >= 0)
                c.inputs.push_back(scalar(skip));
              c.attrs.d("momentum", momentum)
                  .d("dampening", dampening)
                  .d("weight_decay", weightDecay)
                  .i("nesterov", nesterov);
              c.inPlace = {{0, 0}, {2, 1}};
              c.tolerance = 0;
              c.seed = seed++;
              compareWithCpu(c);
            }
}

} // namespace
} // namespace shardc::runtime::testing
