// Kernels that move elements without computing on them: copy, transpose, slice, expand, trilu.
// They dispatch on element size only.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"

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
  SHARDC_RETURN_IF_ERROR(checkOperands("copy", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectSameDtype("copy", "x", x, "y", y));
  if (x.numel() != y.numel())
    return Status::error("copy: y " + y.describe() + " has a different element count than x " +
                         x.describe());
  // memmove: a reshape is the one op where a planner might be tempted to reuse the input's
  // bytes, and overlapping ranges must not corrupt the result if it ever does.
  if (x.sizeBytes() > 0)
    std::memmove(y.data, x.data, x.sizeBytes());
  return Status::ok();
}

Status transposeKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("transpose", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  std::vector<int64_t> perm;
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "perm", &perm));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("transpose", "x", x, "y", y));
  const size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (size_t i = 0; valid && i < rank; ++i) {
    valid = perm[i] >= 0 && perm[i] < static_cast<int64_t>(rank) && !seen[perm[i]];
    if (valid)
      seen[perm[i]] = true;
  }
  if (!valid)
    return Status::error("transpose: attribute 'perm' " + intsString(perm) +
                         " is not a permutation of the " + std::to_string(rank) + " dims of x");
  // Output dim i walks input dim perm[i].
  const std::vector<int64_t> xStrides = contiguousStrides(x.shape);
  StridedLoop loop;
  loop.numOperands = 1;
  loop.dims.resize(rank);
  loop.strides[0].resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    loop.dims[i] = x.shape[perm[i]];
    loop.strides[0][i] = xStrides[perm[i]];
  }
  SHARDC_RETURN_IF_ERROR(expectShape("transpose", "y", y, loop.dims));
  loop.coalesce();
  return copyThrough(loop, x, y);
}

Status sliceKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("slice", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  std::vector<int64_t> starts, steps;
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "starts", &starts));
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "steps", &steps));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("slice", "x", x, "y", y));
  const size_t rank = x.shape.size();
  if (starts.size() != rank || steps.size() != rank)
    return Status::error("slice: attributes 'starts' and 'steps' need one entry per dim of x " +
                         x.describe() + ", got " + std::to_string(starts.size()) + " and " +
                         std::to_string(steps.size()));
  if (y.shape.size() != rank)
    return Status::error("slice: y " + y.describe() + " must have the rank of x " + x.describe());
  // Element i of dim d reads x at starts[d] + i * steps[d]; the first and last must be in range.
  const std::vector<int64_t> xStrides = contiguousStrides(x.shape);
  StridedLoop loop;
  loop.numOperands = 1;
  loop.dims = y.shape;
  loop.strides[0].resize(rank);
  int64_t base = 0;
  const bool empty = y.numel() == 0;
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0 || steps[d] == std::numeric_limits<int64_t>::min())
      return Status::error("slice: invalid step " + std::to_string(steps[d]) + " for dim " +
                           std::to_string(d));
    const int64_t count = y.shape[d];
    if (!empty) {
      const int64_t first = starts[d];
      // count >= 1 here; computed in a way that cannot overflow for in-range inputs.
      const bool firstOk = first >= 0 && first < x.shape[d];
      const int64_t span = count - 1;
      const bool lastOk = firstOk && (steps[d] > 0 ? span <= (x.shape[d] - 1 - first) / steps[d]
                                                   : span <= first / -steps[d]);
      if (!lastOk)
        return Status::error("slice: dim " + std::to_string(d) + " reads " + std::to_string(count) +
                             " elements from " + std::to_string(first) + " with step " +
                             std::to_string(steps[d]) + ", outside x's extent " +
                             std::to_string(x.shape[d]));
      base += first * xStrides[d];
    }
    // A dim read once contributes no stride (and a huge step there must not overflow); for
    // longer dims the extent check above bounds step * stride.
    loop.strides[0][d] = count > 1 && !empty ? steps[d] * xStrides[d] : 0;
  }
  loop.baseOffsets[0] = base;
  loop.coalesce();
  return copyThrough(loop, x, y);
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
  SHARDC_RETURN_IF_ERROR(checkOperands("expand", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectSameDtype("expand", "x", x, "y", y));
  StridedLoop loop;
  Status s = planBroadcast({&x.shape}, y.shape, &loop);
  if (!s)
    return Status::error("expand: " + s.message());
  return copyThrough(loop, x, y);
}

Status triluKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("trilu", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  int64_t upper = 0, k = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "upper", &upper));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "k", &k));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("trilu", "x", x, "y", y));
  SHARDC_RETURN_IF_ERROR(expectShape("trilu", "y", y, x.shape));
  if (x.rank() < 2)
    return Status::error("trilu: x must have rank >= 2, got " + x.describe());
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
