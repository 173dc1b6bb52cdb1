// reduce_sum, reduce_mean, reduce_max and arg_max on the GPU. The contract (and its error messages) is
// the CPU kernels' (cpu/reduce_checks.h), and so is the arithmetic: each output's group is
// folded in the order the CPU kernel does (x's memory order, i.e. row-major over the reduced
// dims) into the CPU's accumulator (double for f32 sums and means, wrapping int64 for
// integers), independent of scheduling (no atomics).
//
// With many outputs, one thread per output folds its whole group (reduceImpl): bit-identical to
// the CPU. With few outputs and large groups (bias gradients: [8192, 768] -> [768]) that leaves
// most of the GPU idle, so reduceSplitImpl splits each group over the threads of a block: each
// thread folds one fixed part in order (a contiguous run, or for sums every n-th element), and
// the parts' results are combined in a fixed tree order in shared memory. Integer sums wrap
// (exact in any grouping) and the maximum is the sequential one (see combine), so only float
// sums and means can differ from the CPU's, by the double-precision rounding of the grouping.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
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

// The fold of an empty group. Max over an empty set is -inf (or the type's lowest value), as
// ONNX defines it.
template <typename T, Reduction R> __device__ inline AccumulatorOf<T, R> initialAcc() {
  using Acc = AccumulatorOf<T, R>;
  if constexpr (R == Reduction::Max) {
    if constexpr (std::is_floating_point_v<T>)
      return -::cuda::std::numeric_limits<T>::infinity();
    else
      return ::cuda::std::numeric_limits<T>::lowest();
  } else {
    return Acc(0);
  }
}

// Folds the next element into the accumulator, as the CPU kernel does.
template <typename T, Reduction R>
__device__ inline AccumulatorOf<T, R> fold(AccumulatorOf<T, R> acc, T v) {
  using Acc = AccumulatorOf<T, R>;
  if constexpr (R == Reduction::Max)
    return (v > acc || v != v) ? v : acc; // NaN propagates
  else if constexpr (std::is_integral_v<T>)
    return static_cast<Acc>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
  else
    return acc + static_cast<Acc>(v);
}

// The fold of two adjacent parts of a group from the folds of each, `earlier` the part first in
// the group's order. Sums add (wrapping integers exactly). For the maximum, the sequential fold
// is the last NaN if there is one, else the first element no other exceeds (+0 and -0 tie):
// taking `later` only when it is a NaN or strictly greater gives exactly that, so the split
// kernel's maximum is the CPU's, bit for bit.
template <typename T, Reduction R>
__device__ inline AccumulatorOf<T, R> combine(AccumulatorOf<T, R> earlier,
                                              AccumulatorOf<T, R> later) {
  using Acc = AccumulatorOf<T, R>;
  if constexpr (R == Reduction::Max)
    return (later > earlier || later != later) ? later : earlier;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<Acc>(static_cast<uint64_t>(earlier) + static_cast<uint64_t>(later));
  else
    return earlier + later;
}

// The output element from its group's fold.
template <typename T, Reduction R>
__device__ inline T finish(AccumulatorOf<T, R> acc, int64_t groupSize) {
  if constexpr (R == Reduction::Max)
    return acc;
  else if constexpr (R == Reduction::Mean && std::is_integral_v<T>)
    return wrapTo<T>(acc / groupSize); // truncates toward zero, as the CPU
  else if constexpr (R == Reduction::Mean)
    return static_cast<T>(acc / static_cast<double>(groupSize));
  else if constexpr (std::is_integral_v<T>)
    return wrapTo<T>(acc);
  else
    return static_cast<T>(acc);
}

// Folds group elements [begin, end) of the group at `in` into acc, in order: one loopOffsets
// per run along the group's innermost dim, then a strided walk of the run.
template <typename T, Reduction R>
__device__ inline AccumulatorOf<T, R> foldRange(AccumulatorOf<T, R> acc, const T *in,
                                                const DeviceLoop &group, int64_t begin,
                                                int64_t end) {
  const int innerDim = group.rank - 1;
  const int64_t innerLength = group.dims[innerDim];
  const int64_t innerStride = group.strides[0][innerDim];
  for (int64_t j = begin; j < end;) {
    const int64_t rowLeft = innerLength - j % innerLength;
    const int64_t run = rowLeft < end - j ? rowLeft : end - j;
    int64_t at[1];
    loopOffsets<1>(group, j, at);
    const T *row = in + at[0];
    // Unrolled so that several loads are in flight ahead of the (ordered) folds.
#pragma unroll 4
    for (int64_t t = 0; t < run; ++t)
      acc = fold<T, R>(acc, row[t * innerStride]);
    j += run;
  }
  return acc;
}

// `kept` walks the outputs (its operand: the offset in x of the group's first element), `group`
// walks one group (its operand: the offset in x relative to that).
template <typename T, Reduction R>
__global__ void reduceImpl(const T *__restrict__ x, T *__restrict__ y, DeviceLoop kept,
                           DeviceLoop group, int64_t groupSize) {
  SHARDC_GRID_STRIDE(i, kept.numel) {
    int64_t base[1];
    loopOffsets<1>(kept, i, base);
    y[i] = finish<T, R>(foldRange<T, R>(initialAcc<T, R>(), x + base[0], group, 0, group.numel),
                        groupSize);
  }
}

// The split reduction's block: a power of two, so that every split count (kSplitBlock / width)
// is one too, as the combining tree needs.
constexpr int kSplitBlock = 512;
// The split kernel runs below this many outputs (one thread per output would fill well under a
// quarter of a large GPU's resident threads) ...
constexpr int64_t kSplitMaxOutputs = 65536;
// ... for groups at least this large (smaller ones are a few loads per thread anyway).
constexpr int64_t kSplitMinGroup = 64;
// Blocks to aim for (two per SM of a large GPU) when choosing the outputs per block.
constexpr int64_t kSplitTargetBlocks = 256;

// Block b reduces outputs [b * width, (b + 1) * width): each of its kSplitBlock / width splits
// per output folds one part of the group in order, then a tree combines neighbouring parts in
// order. With `outputsOnLanes` (x's innermost kept dim is contiguous) neighbouring threads take
// neighbouring outputs, so a warp reads whole segments of a group row, and the parts are
// contiguous. Otherwise neighbouring threads take neighbouring parts of one output's group; with
// `interleaved` (a one-dim group, which is then contiguous in x) split p folds elements p,
// p + splits, p + 2 * splits, ... so that a warp reads consecutive elements. That only regroups
// the additions, so the maximum (whose ties and NaNs need the parts in order) never interleaves.
template <typename T, Reduction R>
__global__ void __launch_bounds__(kSplitBlock)
    reduceSplitImpl(const T *__restrict__ x, T *__restrict__ y, DeviceLoop kept, DeviceLoop group,
                    int64_t groupSize, int width, bool outputsOnLanes, bool interleaved) {
  using Acc = AccumulatorOf<T, R>;
  __shared__ Acc partial[kSplitBlock]; // [split][column]
  const int splits = kSplitBlock / width;
  const int thread = static_cast<int>(threadIdx.x);
  const int column = outputsOnLanes ? thread % width : thread / splits;
  const int split = outputsOnLanes ? thread / width : thread % splits;
  const int64_t output = static_cast<int64_t>(blockIdx.x) * width + column;
  Acc acc = initialAcc<T, R>();
  if (output < kept.numel) {
    int64_t base[1];
    loopOffsets<1>(kept, output, base);
    if (interleaved) {
      const T *in = x + base[0] + group.base[0];
      const int64_t stride = group.strides[0][0];
#pragma unroll 4
      for (int64_t j = split; j < group.numel; j += splits)
        acc = fold<T, R>(acc, in[j * stride]);
    } else {
      const int64_t part = (group.numel + splits - 1) / splits;
      const int64_t begin = split * part < group.numel ? split * part : group.numel;
      const int64_t end = begin + part < group.numel ? begin + part : group.numel;
      acc = foldRange<T, R>(acc, x + base[0], group, begin, end);
    }
  }
  partial[split * width + column] = acc;
  __syncthreads();
  // Round s combines the parts 2^s apart into the lower one: after it, split p (a multiple of
  // 2^(s+1)) holds the fold of parts [p, p + 2^(s+1)). Every thread runs every round.
  for (int step = 1; step < splits; step *= 2) {
    if (split % (2 * step) == 0)
      partial[split * width + column] = combine<T, R>(partial[split * width + column],
                                                      partial[(split + step) * width + column]);
    __syncthreads();
  }
  if (split == 0 && output < kept.numel)
    y[output] = finish<T, R>(partial[column], groupSize);
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
  const bool split = keptLoop.numel < kSplitMaxOutputs && groupLoop.numel >= kSplitMinGroup;
  // Outputs per split block: the most (up to a warp) that still gives kSplitTargetBlocks blocks,
  // but at least 8 (32 bytes of f32, a whole memory sector) when they are contiguous in x.
  const bool outputsOnLanes = keptLoop.strides[0][keptLoop.rank - 1] == 1;
  const bool interleaved = !outputsOnLanes && R != Reduction::Max && groupLoop.rank == 1;
  int width = 32;
  while (width > (outputsOnLanes ? 8 : 1) &&
         (keptLoop.numel + width - 1) / width < kSplitTargetBlocks)
    width /= 2;
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    if (split) {
      const auto blocks = static_cast<unsigned>((keptLoop.numel + width - 1) / width);
      reduceSplitImpl<T, R><<<blocks, kSplitBlock, 0, streamOf(args)>>>(
          x.as<T>(), y.as<T>(), keptLoop, groupLoop, groupSize, width, outputsOnLanes,
          interleaved);
    } else {
      reduceImpl<T, R><<<gridFor(keptLoop.numel), kBlock, 0, streamOf(args)>>>(
          x.as<T>(), y.as<T>(), keptLoop, groupLoop, groupSize);
    }
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

// One thread per output of arg_max: the CPU kernel's scan of its line, in the same order.
template <typename T>
__global__ void argMaxImpl(const T *x, int64_t *y, int64_t outer, int64_t n, int64_t inner,
                           bool selectLast) {
  const int64_t out = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (out >= outer * inner)
    return;
  const T *line = x + (out / inner) * n * inner + out % inner;
  int64_t best = 0;
  T top = line[0];
  for (int64_t k = 1; k < n; ++k) {
    const T v = line[k * inner];
    const bool better =
        top != top ? (selectLast && v != v) : (v != v || v > top || (selectLast && v == top));
    if (better) {
      best = k;
      top = v;
    }
  }
  y[out] = best;
}

} // namespace

Status argMaxKernel(KernelArgs &args) {
  int64_t axis = 0;
  bool selectLast = false;
  SHARDC_RETURN_IF_ERROR(cpu::checkArgMax(args, &axis, &selectLast));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  if (y.numel() == 0)
    return Status::ok();
  return cpu::visitNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    argMaxImpl<T><<<gridFor(outer * inner), kBlock, 0, streamOf(args)>>>(
        x.as<T>(), y.as<int64_t>(), outer, x.shape[axis], inner, selectLast);
    return launchStatus("arg_max");
  });
}

Status reduceSumKernel(KernelArgs &args) { return reduceCommon<Reduction::Sum>("reduce_sum", args); }
Status reduceMeanKernel(KernelArgs &args) {
  return reduceCommon<Reduction::Mean>("reduce_mean", args);
}
Status reduceMaxKernel(KernelArgs &args) { return reduceCommon<Reduction::Max>("reduce_max", args); }

} // namespace shardc::runtime::cuda
