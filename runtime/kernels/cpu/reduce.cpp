// reduce_sum, reduce_mean and reduce_max over a sorted, non-empty list of axes; arg_max along
// one axis.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/convert.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/reduce_checks.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <limits>
#include <type_traits>

namespace shardc::runtime::cpu {

namespace {

enum class Reduction { Sum, Mean, Max };

// The accumulator: double for float sums (precision), int64 for integer sums (wrapping, as the
// final conversion to the output type does), the element type itself for max.
template <typename T, Reduction R> struct Accumulator {
  using type = std::conditional_t<R == Reduction::Max, T,
                                  std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>;
};

// The workspace of a reduction: one accumulator per output element.
template <typename T, Reduction R>
Status takeAccumulators(const char *kernel, Workspace &workspace, const Tensor &y,
                        typename Accumulator<T, R>::type **acc) {
  return workspace.take(kernel, y.numel(), acc);
}

template <typename T, Reduction R>
Status reduceTyped(const char *kernel, const KernelArgs &args, const std::vector<bool> &reduced,
                   int64_t groupSize) {
  using Acc = typename Accumulator<T, R>::type;
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const int64_t outCount = y.numel();
  if constexpr (R == Reduction::Mean && std::is_integral_v<T>) {
    if (groupSize == 0 && outCount > 0)
      return Status::error(std::string(kernel) + ": integer mean over zero elements");
  }
  // Max over an empty set is -inf (or the type's lowest value), as ONNX defines it.
  Acc init = Acc(0);
  if constexpr (R == Reduction::Max)
    init = std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                       : std::numeric_limits<T>::lowest();
  Workspace workspace(args);
  Acc *acc = nullptr;
  SHARDC_RETURN_IF_ERROR((takeAccumulators<T, R>(kernel, workspace, y, &acc)));
  std::fill(acc, acc + outCount, init);

  // Walk x in memory order; operand 0 is the accumulator index.
  StridedLoop loop = planReductionWalk(x.shape, reduced);

  const T *px = x.as<T>();
  Acc *pacc = acc;
  auto fold = [](Acc a, T v) -> Acc {
    if constexpr (R == Reduction::Max) {
      return (v > a || v != v) ? v : a; // NaN propagates
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(v));
    } else {
      return a + static_cast<Acc>(v);
    }
  };
  forEachRow(loop, [&](int64_t xOffset, const int64_t *accOffset, const int64_t *accStride,
                       int64_t count) {
    const T *in = px + xOffset;
    if (accStride[0] == 0) {
      // The innermost dim is reduced: fold the whole row into one accumulator.
      Acc a = pacc[accOffset[0]];
      for (int64_t i = 0; i < count; ++i)
        a = fold(a, in[i]);
      pacc[accOffset[0]] = a;
    } else if (accStride[0] == 1) {
      // The innermost dim is kept (e.g. summing over the batch): a contiguous row update.
      Acc *out = pacc + accOffset[0];
      for (int64_t i = 0; i < count; ++i)
        out[i] = fold(out[i], in[i]);
    } else {
      Acc *out = pacc + accOffset[0];
      for (int64_t i = 0; i < count; ++i)
        out[i * accStride[0]] = fold(out[i * accStride[0]], in[i]);
    }
  });

  T *py = y.as<T>();
  for (int64_t i = 0; i < outCount; ++i) {
    if constexpr (R == Reduction::Max) {
      py[i] = acc[i];
    } else if constexpr (R == Reduction::Mean && std::is_integral_v<T>) {
      // Integer mean truncates toward zero (NumPy's mean cast back to the integer type).
      py[i] = convertElement<T>(static_cast<int64_t>(acc[i] / groupSize));
    } else if constexpr (R == Reduction::Mean) {
      py[i] = static_cast<T>(acc[i] / static_cast<double>(groupSize));
    } else {
      py[i] = convertElement<T>(acc[i]);
    }
  }
  return Status::ok();
}

template <Reduction R> Status reduceCommon(const char *kernel, KernelArgs &args) {
  std::vector<bool> reduced;
  int64_t groupSize = 0;
  SHARDC_RETURN_IF_ERROR(checkReduce(kernel, args, &reduced, &groupSize));
  return visitNumeric(args.inputs[0].dtype, [&](auto tag) {
    return reduceTyped<decltype(tag), R>(kernel, args, reduced, groupSize);
  });
}

template <Reduction R>
Status reduceWorkspace(const char *kernel, const KernelArgs &args, uint64_t *bytes) {
  std::vector<bool> reduced;
  int64_t groupSize = 0;
  SHARDC_RETURN_IF_ERROR(checkReduce(kernel, args, &reduced, &groupSize));
  return visitNumeric(args.inputs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    typename Accumulator<T, R>::type *acc = nullptr;
    return measureWorkspace(bytes, [&](Workspace &workspace) {
      return takeAccumulators<T, R>(kernel, workspace, args.outputs[0], &acc);
    });
  });
}

} // namespace

Status reduceSumKernel(KernelArgs &args) {
  return reduceCommon<Reduction::Sum>("reduce_sum", args);
}

Status reduceMeanKernel(KernelArgs &args) {
  return reduceCommon<Reduction::Mean>("reduce_mean", args);
}

Status reduceMaxKernel(KernelArgs &args) {
  return reduceCommon<Reduction::Max>("reduce_max", args);
}

// The first (or, with select_last_index, the last) index of the largest element along the
// axis; a NaN counts as larger than any number, as in NumPy and PyTorch.
Status argMaxKernel(KernelArgs &args) {
  int64_t axis = 0;
  bool selectLast = false;
  SHARDC_RETURN_IF_ERROR(checkArgMax(args, &axis, &selectLast));
  const Tensor &x = args.inputs[0];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  const int64_t n = x.shape[axis];
  int64_t *py = args.outputs[0].as<int64_t>();
  return visitNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T *line = px + o * n * inner + i;
        int64_t best = 0;
        T top = line[0];
        for (int64_t k = 1; k < n; ++k) {
          const T v = line[k * inner];
          const bool better = top != top ? (selectLast && v != v)
                                         : (v != v || v > top || (selectLast && v == top));
          if (better) {
            best = k;
            top = v;
          }
        }
        py[o * inner + i] = best;
      }
    return Status::ok();
  });
}

Status reduceSumWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return reduceWorkspace<Reduction::Sum>("reduce_sum", args, bytes);
}

Status reduceMeanWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return reduceWorkspace<Reduction::Mean>("reduce_mean", args, bytes);
}

Status reduceMaxWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return reduceWorkspace<Reduction::Max>("reduce_max", args, bytes);
}

} // namespace shardc::runtime::cpu
