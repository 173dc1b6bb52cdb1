// Kernels that move elements without computing on them: copy, transpose, slice, expand, trilu.
// They dispatch on element size only.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/kernel_threads.h"
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
  if (x.sizeBytes() == 0 || x.data == y.data)
    return Status::ok();
  const int64_t bytes = static_cast<int64_t>(x.sizeBytes());
  const auto *from = static_cast<const char *>(x.data);
  auto *to = static_cast<char *>(y.data);
  if (to + bytes <= from || from + bytes <= to) {
    // Disjoint (always, as planned): split over the kernel threads.
    parallelFor(bytes, kElementsPerThread * 4, [&](int64_t first, int64_t last) {
      std::memcpy(to + first, from + first, static_cast<size_t>(last - first));
    });
  } else {
    std::memmove(to, from, static_cast<size_t>(bytes));
  }
  return Status::ok();
}

namespace {

// A transpose that moves the innermost dimension reads x with a stride along every output
// row: each element read fetches a cache line for one element. Tiled, it copies kTile x kTile
// blocks of the plane of the output's innermost dim (`inner`) and the dim x walks contiguously
// (`unit`), so that every line read and written is used whole. Same elements, same places.
constexpr int64_t kTile = 32;

template <typename T>
void transposeTiled(const T *x, T *y, const StridedLoop &loop, size_t unit) {
  const size_t rank = loop.dims.size(), inner = rank - 1;
  const std::vector<int64_t> &xs = loop.strides[0];
  std::vector<int64_t> ys(rank, 1);
  for (size_t d = inner; d-- > 0;)
    ys[d] = ys[d + 1] * loop.dims[d + 1];
  const int64_t rows = loop.dims[unit], cols = loop.dims[inner];
  const int64_t xCol = xs[inner], yRow = ys[unit];
  // The work items: every band of kTile rows of every plane (a position of the other dims),
  // split over the kernel threads. An item's plane is found from its index.
  const int64_t bands = (rows + kTile - 1) / kTile;
  int64_t planes = 1;
  for (size_t d = 0; d < rank; ++d)
    if (d != unit && d != inner)
      planes *= loop.dims[d];
  const int64_t grain = std::max<int64_t>(1, kElementsPerThread / (kTile * cols));
  parallelFor(planes * bands, grain, [&](int64_t first, int64_t last) {
    for (int64_t item = first; item < last; ++item) {
      int64_t plane = item / bands, xBase = 0, yBase = 0;
      for (size_t d = rank; d-- > 0;) {
        if (d == unit || d == inner)
          continue;
        const int64_t at = plane % loop.dims[d];
        plane /= loop.dims[d];
        xBase += at * xs[d];
        yBase += at * ys[d];
      }
      const int64_t r0 = item % bands * kTile, r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t c = c0; c < c1; ++c)
          for (int64_t r = r0; r < r1; ++r)
            y[yBase + r * yRow + c] = x[xBase + r + c * xCol];
      }
    }
  });
}

} // namespace

Status transposeKernel(KernelArgs &args) {
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(planTranspose(args, &loop));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  // The output dim that x walks contiguously, when it is not the innermost one.
  const size_t rank = loop.dims.size();
  size_t unit = rank;
  for (size_t d = 0; d + 1 < rank; ++d)
    if (loop.strides[0][d] == 1)
      unit = d;
  if (unit == rank || loop.dims.back() < 2 || loop.dims[unit] < 2)
    return copyThrough(loop, x, y);
  return visitElementSize(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    transposeTiled(x.as<T>(), y.as<T>(), loop, unit);
    return Status::ok();
  });
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
