// reduce_sum, reduce_mean and reduce_max on the GPU. The contract (and its error messages) is
// the CPU kernels' (cpu/reduce_checks.h), and so is the arithmetic: one thread per output
// element folds its group in the order the CPU kernel does (x's memory order, i.e. row-major
// over the reduced dims) into the CPU's accumulator (double for f32 sums and means, wrapping
// int64 for integers), so results are bit-identical to the CPU's and independent of scheduling
// (no atomics). A thread per output is slow for reductions to very few outputs; correctness
// first.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/reduce_checks.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"

#include <cuda/std/limits>
#include <type_traits>

namespace shardc::runtime::cuda {

namespace {

enum class Reduction { Sum, Mean, Max };

template <typename T, Reduction R>
using AccumulatorOf =
    std::conditional_t<R == Reduction::Max, T,
                       std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>;

// Narrows an int64 accumulator through the unsigned type (the two's-complement wrap, as
// cpu/convert.h).
template <typename T> __device__ inline T wrapTo(int64_t v) {
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(v));
}

// `kept` walks the outputs (its operand: the offset in x of the group's first element), `group`
// walks one group (its operand: the offset in x relative to that).
template <typename T, Reduction R>
__global__ void reduceImpl(const T *__restrict__ x, T *__restrict__ y, DeviceLoop kept,
                           DeviceLoop group, int64_t groupSize) {
  using Acc = AccumulatorOf<T, R>;
  const int innerDim = group.rank - 1;
  const int64_t innerLength = group.dims[innerDim];
  const int64_t innerStride = group.strides[0][innerDim];
  const int64_t groupRows = innerLength > 0 ? group.numel / innerLength : 0;
  SHARDC_GRID_STRIDE(i, kept.numel) {
    int64_t base[1];
    loopOffsets<1>(kept, i, base);
    Acc acc;
    if constexpr (R == Reduction::Max) {
      // Max over an empty set is -inf (or the type's lowest value), as ONNX defines it.
      if constexpr (std::is_floating_point_v<T>)
        acc = -::cuda::std::numeric_limits<T>::infinity();
      else
        acc = ::cuda::std::numeric_limits<T>::lowest();
    } else {
      acc = Acc(0);
    }
    for (int64_t row = 0; row < groupRows; ++row) {
      int64_t at[1];
      loopOffsets<1>(group, row * innerLength, at);
      const T *in = x + base[0] + at[0];
      for (int64_t t = 0; t < innerLength; ++t) {
        const T v = in[t * innerStride];
        if constexpr (R == Reduction::Max)
          acc = (v > acc || v != v) ? v : acc; // NaN propagates
        else if constexpr (std::is_integral_v<T>)
          acc = static_cast<Acc>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
        else
          acc = acc + static_cast<Acc>(v);
      }
    }
    if constexpr (R == Reduction::Max)
      y[i] = acc;
    else if constexpr (R == Reduction::Mean && std::is_integral_v<T>)
      y[i] = wrapTo<T>(acc / groupSize); // truncates toward zero, as the CPU
    else if constexpr (R == Reduction::Mean)
      y[i] = static_cast<T>(acc / static_cast<double>(groupSize));
    else if constexpr (std::is_integral_v<T>)
      y[i] = wrapTo<T>(acc);
    else
      y[i] = static_cast<T>(acc);
  }
}

template <Reduction R> Status reduceCommon(const char *kernel, KernelArgs &args) {
  std::vector<bool> reduced;
  int64_t groupSize = 0;
  SHARDC_RETURN_IF_ERROR(cpu::checkReduce(kernel, args, &reduced, &groupSize));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  if (R == Reduction::Mean && x.dtype != program::F32 && groupSize == 0 && y.numel() > 0)
    return Status::error(std::string(kernel) + ": integer mean over zero elements");
  // y is row-major over x's kept dims (keepdims adds only size-1 dims): each kept dim walks x
  // with its contiguous stride; the reduced dims, in order, make one group.
  const std::vector<int64_t> strides = cpu::contiguousStrides(x.shape);
  cpu::StridedLoop kept, group;
  kept.numOperands = group.numOperands = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    cpu::StridedLoop &loop = reduced[d] ? group : kept;
    loop.dims.push_back(x.shape[d]);
    loop.strides[0].push_back(strides[d]);
  }
  for (cpu::StridedLoop *loop : {&kept, &group})
    if (loop->dims.empty()) { // a scalar walk is one dim of size 1
      loop->dims = {1};
      loop->strides[0] = {0};
    }
  kept.coalesce();
  group.coalesce();
  DeviceLoop keptLoop, groupLoop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kernel, kept, &keptLoop));
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kernel, group, &groupLoop));
  if (y.numel() == 0)
    return Status::ok();
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    reduceImpl<T, R><<<gridFor(keptLoop.numel), kBlock, 0, streamOf(args)>>>(
        x.as<T>(), y.as<T>(), keptLoop, groupLoop, groupSize);
    return launchStatus(kernel);
  };
  switch (x.dtype) {
  case program::F32:
    return launch(float{});
  case program::I64:
    return launch(int64_t{});
  case program::I32:
    return launch(int32_t{});
  default: // checkReduce admits only numeric dtypes
    return Status::error(std::string(kernel) + ": unsupported dtype of x " + x.describe());
  }
}

} // namespace

Status reduceSumKernel(KernelArgs &args) { return reduceCommon<Reduction::Sum>("reduce_sum", args); }
Status reduceMeanKernel(KernelArgs &args) {
  return reduceCommon<Reduction::Mean>("reduce_mean", args);
}
Status reduceMaxKernel(KernelArgs &args) { return reduceCommon<Reduction::Max>("reduce_max", args); }

} // namespace shardc::runtime::cuda
