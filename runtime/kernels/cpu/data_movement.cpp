// Kernels that move elements without computing on them: copy, transpose, slice, expand, trilu.
// They dispatch on element size only.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/movement_checks.h"

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
// kernels' strided loop with x as operand 0 and y as operand 1.
template <typename T>
void padRows(const Tensor &x, const Tensor &y, const std::vector<int64_t> &pads, T value) {
  T *out = y.as<T>();
  std::fill(out, out + y.numel(), value);
  const size_t rank = x.shape.size();
  const std::vector<int64_t> xs = contiguousStrides(x.shape), ys = contiguousStrides(y.shape);
  StridedLoop loop;
  loop.numOperands = 2;
  for (size_t d = 0; d < rank; ++d) {
    // The first index read in x, the first written in y, and how many.
    const int64_t fromX = std::max<int64_t>(0, -pads[d]), toY = std::max<int64_t>(0, pads[d]);
    const int64_t count = std::min(x.shape[d] - fromX, y.shape[d] - toY);
    if (count <= 0)
      return;
    loop.dims.push_back(count);
    loop.strides[0].push_back(xs[d]);
    loop.strides[1].push_back(ys[d]);
    loop.baseOffsets[0] += fromX * xs[d];
    loop.baseOffsets[1] += toY * ys[d];
  }
  if (rank == 0) { // a scalar walk is one dim of size 1
    loop.dims = {1};
    loop.strides[0] = loop.strides[1] = {0};
  }
  loop.coalesce();
  const T *in = x.as<T>();
  forEachRow(loop, [&](int64_t, const int64_t *offsets, const int64_t *steps, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      out[offsets[1] + i * steps[1]] = in[offsets[0] + i * steps[0]];
  });
}

} // namespace

Status padKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("pad", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  std::vector<int64_t> pads;
  double value = 0;
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "pads", &pads));
  SHARDC_RETURN_IF_ERROR(getDoubleAttr(args, "value", &value));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("pad", "x", x, "y", y));
  const size_t rank = x.shape.size();
  if (pads.size() != 2 * rank || y.shape.size() != rank)
    return Status::error("pad: attribute 'pads' needs 2 entries per dim of x " + x.describe() +
                         " and y " + y.describe() + " its rank, got " +
                         std::to_string(pads.size()) + " pads");
  for (size_t d = 0; d < rank; ++d) {
    const int64_t limit = int64_t(1) << 40;
    if (std::abs(pads[d]) > limit || std::abs(pads[d + rank]) > limit ||
        y.shape[d] != x.shape[d] + pads[d] + pads[d + rank])
      return Status::error("pad: y " + y.describe() + " is not x " + x.describe() +
                           " with pads " + std::to_string(pads[d]) + ", " +
                           std::to_string(pads[d + rank]) + " on dim " + std::to_string(d));
  }
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
  SHARDC_RETURN_IF_ERROR(checkOperands("cum_sum", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  int64_t axis = 0, exclusive = 0, reverse = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "exclusive", &exclusive));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "reverse", &reverse));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("cum_sum", "x", x, "y", y));
  SHARDC_RETURN_IF_ERROR(expectShape("cum_sum", "y", y, x.shape));
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    return Status::error("cum_sum: axis " + std::to_string(axis) + " is out of range for x " +
                         x.describe());
  if (x.dtype == program::BOOL)
    return Status::error("cum_sum: x must be numeric, got " + x.describe());
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
  SHARDC_RETURN_IF_ERROR(
      checkOperands("scatter_nd", args, Arity::exactly(3), Arity::exactly(1)));
  const Tensor &data = args.inputs[0], &indices = args.inputs[1], &updates = args.inputs[2];
  const Tensor &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectSameDtype("scatter_nd", "data", data, "y", y));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("scatter_nd", "data", data, "updates", updates));
  SHARDC_RETURN_IF_ERROR(expectShape("scatter_nd", "y", y, data.shape));
  std::string reduction;
  SHARDC_RETURN_IF_ERROR(getStringAttr(args, "reduction", &reduction));
  enum class Combine { kNone, kAdd, kMul, kMax, kMin };
  const Combine combine = reduction == "none" ? Combine::kNone
                          : reduction == "add" ? Combine::kAdd
                          : reduction == "mul" ? Combine::kMul
                          : reduction == "max" ? Combine::kMax
                          : reduction == "min" ? Combine::kMin
                                               : static_cast<Combine>(-1);
  if (static_cast<int>(combine) < 0)
    return Status::error("scatter_nd: attribute 'reduction' '" + reduction +
                         "' is not none, add, mul, max or min");
  if (combine != Combine::kNone && data.dtype == program::BOOL)
    return Status::error("scatter_nd: reduction '" + reduction + "' on bool data " +
                         data.describe());
  if (indices.dtype != program::I64 && indices.dtype != program::I32)
    return Status::error("scatter_nd: indices must be i64 or i32, got " + indices.describe());
  if (indices.rank() < 1)
    return Status::error("scatter_nd: indices must have rank >= 1, got " + indices.describe());
  const int64_t k = indices.shape.back();
  if (k < 1 || k > static_cast<int64_t>(data.rank()))
    return Status::error("scatter_nd: index tuples of length " + std::to_string(k) +
                         " do not address data " + data.describe());
  std::vector<int64_t> expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  SHARDC_RETURN_IF_ERROR(expectShape("scatter_nd", "updates", updates, expected));
  const int64_t tuples = dimsProduct(indices.shape, 0, indices.shape.size() - 1);
  const int64_t slice = dimsProduct(data.shape, static_cast<size_t>(k), data.shape.size());
  // The flat offset of tuple t's slice in data (negative indices from the end).
  auto tupleOffset = [&](int64_t t, int64_t *offset) {
    *offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = t * k + j;
      int64_t index = indices.dtype == program::I64 ? indices.as<int64_t>()[at]
                                                    : indices.as<int32_t>()[at];
      const int64_t size = data.shape[static_cast<size_t>(j)];
      if (index < -size || index >= size)
        return Status::error("scatter_nd: index " + std::to_string(index) + " of tuple " +
                             std::to_string(t) + " is out of range for dim " +
                             std::to_string(j) + " of data " + data.describe());
      *offset = *offset * size + (index < 0 ? index + size : index);
    }
    *offset *= slice;
    return Status::ok();
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
