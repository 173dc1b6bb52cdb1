// Kernels that move elements without computing on them: copy, transpose, slice, expand, trilu.
// They dispatch on element size only.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/movement_checks.h"
#include "runtime/kernels/cpu/pad_scan_checks.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace shardc::runtime::cpu {

namespace {

// Copies the elements that the single-operand `loop` reads from x into y.
Status copyThrough(const StridedLoop &loop, const Tensor &x, const Tensor &y) {
  return visitElementSize(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    copyStrided(x.as<T>(), y.as<T>(), loop);
    return Status::ok();
  });
}

} // namespace

Status copyKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkCopy(args));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  // memmove: a reshape is the one op where a planner might be tempted to reuse the input's
  // bytes, and overlapping ranges must not corrupt the result if it ever does.
  if (x.sizeBytes() > 0)
    std::memmove(y.data, x.data, x.sizeBytes());
  return Status::ok();
}

Status transposeKernel(KernelArgs &args) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(planTranspose(args, &loop));
  return copyThrough(loop, args.inputs[0], args.outputs[0]);
}

Status sliceKernel(KernelArgs &args) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(planSlice(args, &loop));
  return copyThrough(loop, args.inputs[0], args.outputs[0]);
}

namespace {

// y = x with pads[d] elements before and pads[d + rank] after dimension d (negative: removed),
// the new ones `value`: fills y, then copies the block of x that lands in it, walked by the
// shared plan (pad_scan_checks.h) with x as operand 0 and y as operand 1.
template <typename T>
void padRows(const Tensor &x, const Tensor &y, const std::vector<int64_t> &pads, T value) {
  T *out = y.as<T>();
  std::fill(out, out + y.numel(), value);
  StridedLoop loop;
  if (!planPad(x, y, pads, &loop))
    return;
  const T *in = x.as<T>();
  forEachRow(loop, [&](int64_t, const int64_t *offsets, const int64_t *steps, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      out[offsets[1] + i * steps[1]] = in[offsets[0] + i * steps[0]];
  });
}

} // namespace

Status padKernel(KernelArgs &args) {
  std::vector<int64_t> pads;
  double value = 0;
  SHARDC_RETURN_IF_ERROR(checkPad(args, &pads, &value));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  switch (x.dtype) {
  case program::F32:
    padRows<float>(x, y, pads, static_cast<float>(value));
    return Status::ok();
  case program::I64:
    padRows<int64_t>(x, y, pads, static_cast<int64_t>(value));
    return Status::ok();
  case program::I32:
    padRows<int32_t>(x, y, pads, static_cast<int32_t>(value));
    return Status::ok();
  case program::BOOL:
    padRows<uint8_t>(x, y, pads, value != 0 ? 1 : 0);
    return Status::ok();
  default:
    return Status::error("pad: unsupported dtype of x " + x.describe());
  }
}

Status expandKernel(KernelArgs &args) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(planExpand(args, &loop));
  return copyThrough(loop, args.inputs[0], args.outputs[0]);
}

Status cumSumKernel(KernelArgs &args) {
  int64_t axis = 0;
  bool exclusive = false, reverse = false;
  SHARDC_RETURN_IF_ERROR(checkCumSum(args, &axis, &exclusive, &reverse));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = dimsProduct(x.shape, 0, a), length = x.shape[a];
  const int64_t inner = dimsProduct(x.shape, a + 1, x.shape.size());
  return visitNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    // Floats accumulate in double, as PyTorch's CPU cumsum does; integers in int64.
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    const T *in = x.as<T>();
    T *out = y.as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        Acc sum = 0;
        for (int64_t step = 0; step < length; ++step) {
          const int64_t k = reverse ? length - 1 - step : step;
          const int64_t at = (o * length + k) * inner + i;
          const T value = in[at]; // read before writing: x and y may be one buffer
          if (exclusive) {
            out[at] = static_cast<T>(sum);
            sum += static_cast<Acc>(value);
          } else {
            sum += static_cast<Acc>(value);
            out[at] = static_cast<T>(sum);
          }
        }
      }
    return Status::ok();
  });
}

Status scatterNdKernel(KernelArgs &args) {
  ScatterNdPlan plan;
  SHARDC_RETURN_IF_ERROR(checkScatterNd(args, &plan));
  const Tensor &data = args.inputs[0], &indices = args.inputs[1], &updates = args.inputs[2];
  const Tensor &y = args.outputs[0];
  const int64_t tuples = plan.tuples, slice = plan.slice;
  const ScatterCombine combine = plan.combine;
  using Combine = ScatterCombine;
  // The flat offset of tuple t's slice in data (negative indices from the end).
  auto tupleOffset = [&](int64_t t, int64_t *offset) {
    return scatterNdTupleOffset(plan, data, indices, t, offset);
  };
  // Every tuple is checked before anything is written, so an error leaves y untouched; the
  // offsets are computed again while writing rather than kept (no scratch memory).
  for (int64_t t = 0, offset = 0; t < tuples; ++t)
    SHARDC_RETURN_IF_ERROR(tupleOffset(t, &offset));
  // By dtype, not element size: the reductions do arithmetic.
  return visitAnyDtype(data.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *in = data.as<T>(), *from = updates.as<T>();
    T *out = y.as<T>();
    if (out != in)
      std::copy(in, in + data.numel(), out);
    // In tuple order (ONNX's reference): with reduction "none", where tuples repeat, the last
    // one's update stays.
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t offset = 0;
      (void)tupleOffset(t, &offset); // checked above
      const T *u = from + t * slice;
      T *o = out + offset;
      for (int64_t i = 0; i < slice; ++i) {
        switch (combine) {
        case Combine::kNone: o[i] = u[i]; break;
        case Combine::kAdd: o[i] = static_cast<T>(o[i] + u[i]); break;
        case Combine::kMul: o[i] = static_cast<T>(o[i] * u[i]); break;
        case Combine::kMax: o[i] = std::max(o[i], u[i]); break;
        case Combine::kMin: o[i] = std::min(o[i], u[i]); break;
        }
      }
    }
    return Status::ok();
  });
}

Status triluKernel(KernelArgs &args) {
  int64_t upper = 0, k = 0;
  SHARDC_RETURN_IF_ERROR(checkTrilu(args, &upper, &k));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
  const int64_t matrices = dimsProduct(x.shape, 0, x.shape.size() - 2);
  return visitElementSize(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.as<T>();
    T *out = y.as<T>();
    for (int64_t b = 0; b < matrices; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t offset = (b * rows + i) * cols;
        for (int64_t j = 0; j < cols; ++j) {
          // Upper keeps j - i >= k, lower keeps j - i <= k (the diagonal offset k is unbounded,
          // so compare without forming i + k).
          const bool keep = upper ? (j - i >= k) : (j - i <= k);
          out[offset + j] = keep ? in[offset + j] : T(0);
        }
      }
    }
    return Status::ok();
  });
}

} // namespace shardc::runtime::cpu
