#include "runtime/kernels/cpu/pad_scan_checks.h"

#include "runtime/kernels/cpu/checks.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

namespace shardc::runtime::cpu {

Status checkPad(const KernelArgs &args, std::vector<int64_t> *pads, double *value) {
  SHARDC_RETURN_IF_ERROR(checkOperands("pad", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "pads", pads));
  SHARDC_RETURN_IF_ERROR(getDoubleAttr(args, "value", value));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("pad", "x", x, "y", y));
  const size_t rank = x.shape.size();
  if (pads->size() != 2 * rank || y.shape.size() != rank)
    return Status::error("pad: attribute 'pads' needs 2 entries per dim of x " + x.describe() +
                         " and y " + y.describe() + " its rank, got " +
                         std::to_string(pads->size()) + " pads");
  for (size_t d = 0; d < rank; ++d) {
    const int64_t limit = int64_t(1) << 40;
    const int64_t before = (*pads)[d], after = (*pads)[d + rank];
    if (std::abs(before) > limit || std::abs(after) > limit ||
        y.shape[d] != x.shape[d] + before + after)
      return Status::error("pad: y " + y.describe() + " is not x " + x.describe() +
                           " with pads " + std::to_string(before) + ", " +
                           std::to_string(after) + " on dim " + std::to_string(d));
  }
  return Status::ok();
}

bool planPad(const Tensor &x, const Tensor &y, const std::vector<int64_t> &pads,
             StridedLoop *loop) {
  const size_t rank = x.shape.size();
  const std::vector<int64_t> xs = contiguousStrides(x.shape), ys = contiguousStrides(y.shape);
  *loop = StridedLoop();
  loop->numOperands = 2;
  for (size_t d = 0; d < rank; ++d) {
    // The first index read in x, the first written in y, and how many.
    const int64_t fromX = std::max<int64_t>(0, -pads[d]), toY = std::max<int64_t>(0, pads[d]);
    const int64_t count = std::min(x.shape[d] - fromX, y.shape[d] - toY);
    if (count <= 0)
      return false;
    loop->dims.push_back(count);
    loop->strides[0].push_back(xs[d]);
    loop->strides[1].push_back(ys[d]);
    loop->baseOffsets[0] += fromX * xs[d];
    loop->baseOffsets[1] += toY * ys[d];
  }
  if (rank == 0) { // a scalar walk is one dim of size 1
    loop->dims = {1};
    loop->strides[0] = loop->strides[1] = {0};
  }
  loop->coalesce();
  return true;
}

Status planPadForSlice(const KernelArgs &args, StridedLoop *loop) {
  const char *kernel = "pad_for_slice";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &dx = args.outputs[0];
  std::vector<int64_t> starts, steps;
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "starts", &starts));
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "steps", &steps));
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, "dy", dy, "dx", dx));
  const size_t rank = dx.shape.size();
  if (starts.size() != rank || steps.size() != rank)
    return Status::error(std::string(kernel) +
                         ": attributes 'starts' and 'steps' need one entry per dim of dx " +
                         dx.describe() + ", got " + std::to_string(starts.size()) + " and " +
                         std::to_string(steps.size()));
  if (dy.shape.size() != rank)
    return Status::error(std::string(kernel) + ": dy " + dy.describe() +
                         " must have the rank of dx " + dx.describe());
  // The same plan and extent checks as the forward `slice` (data_movement.cpp), with dx in the
  // role of x and dy in the role of y: element i of dim d of dy lands at
  // starts[d] + i * steps[d] of dx.
  const std::vector<int64_t> dxStrides = contiguousStrides(dx.shape);
  *loop = StridedLoop();
  loop->numOperands = 1;
  loop->dims = dy.shape;
  loop->strides[0].resize(rank);
  int64_t base = 0;
  const bool empty = dy.numel() == 0;
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0 || steps[d] == std::numeric_limits<int64_t>::min())
      return Status::error(std::string(kernel) + ": invalid step " + std::to_string(steps[d]) +
                           " for dim " + std::to_string(d));
    const int64_t count = dy.shape[d];
    if (!empty) {
      const int64_t first = starts[d];
      const bool firstOk = first >= 0 && first < dx.shape[d];
      const int64_t span = count - 1;
      const bool lastOk = firstOk && (steps[d] > 0 ? span <= (dx.shape[d] - 1 - first) / steps[d]
                                                   : span <= first / -steps[d]);
      if (!lastOk)
        return Status::error(std::string(kernel) + ": dim " + std::to_string(d) + " writes " +
                             std::to_string(count) + " elements from " + std::to_string(first) +
                             " with step " + std::to_string(steps[d]) + ", outside dx's extent " +
                             std::to_string(dx.shape[d]));
      base += first * dxStrides[d];
    }
    loop->strides[0][d] = count > 1 && !empty ? steps[d] * dxStrides[d] : 0;
  }
  loop->baseOffsets[0] = base;
  loop->coalesce();
  return Status::ok();
}

Status checkCumSum(const KernelArgs &args, int64_t *axis, bool *exclusive, bool *reverse) {
  SHARDC_RETURN_IF_ERROR(checkOperands("cum_sum", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  int64_t exclusiveAttr = 0, reverseAttr = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", axis));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "exclusive", &exclusiveAttr));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "reverse", &reverseAttr));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("cum_sum", "x", x, "y", y));
  SHARDC_RETURN_IF_ERROR(expectShape("cum_sum", "y", y, x.shape));
  if (*axis < 0 || *axis >= static_cast<int64_t>(x.rank()))
    return Status::error("cum_sum: axis " + std::to_string(*axis) + " is out of range for x " +
                         x.describe());
  if (x.dtype == program::BOOL)
    return Status::error("cum_sum: x must be numeric, got " + x.describe());
  *exclusive = exclusiveAttr != 0;
  *reverse = reverseAttr != 0;
  return Status::ok();
}

Status checkScatterNd(const KernelArgs &args, ScatterNdPlan *plan) {
  SHARDC_RETURN_IF_ERROR(
      checkOperands("scatter_nd", args, Arity::exactly(3), Arity::exactly(1)));
  const Tensor &data = args.inputs[0], &indices = args.inputs[1], &updates = args.inputs[2];
  const Tensor &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectSameDtype("scatter_nd", "data", data, "y", y));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("scatter_nd", "data", data, "updates", updates));
  SHARDC_RETURN_IF_ERROR(expectShape("scatter_nd", "y", y, data.shape));
  std::string reduction;
  SHARDC_RETURN_IF_ERROR(getStringAttr(args, "reduction", &reduction));
  if (reduction == "none")
    plan->combine = ScatterCombine::kNone;
  else if (reduction == "add")
    plan->combine = ScatterCombine::kAdd;
  else if (reduction == "mul")
    plan->combine = ScatterCombine::kMul;
  else if (reduction == "max")
    plan->combine = ScatterCombine::kMax;
  else if (reduction == "min")
    plan->combine = ScatterCombine::kMin;
  else
    return Status::error("scatter_nd: attribute 'reduction' '" + reduction +
                         "' is not none, add, mul, max or min");
  if (plan->combine != ScatterCombine::kNone && data.dtype == program::BOOL)
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
  plan->k = k;
  plan->tuples = dimsProduct(indices.shape, 0, indices.shape.size() - 1);
  plan->slice = dimsProduct(data.shape, static_cast<size_t>(k), data.shape.size());
  return Status::ok();
}

Status scatterNdTupleOffset(const ScatterNdPlan &plan, const Tensor &data, const Tensor &indices,
                            int64_t t, int64_t *offset) {
  *offset = 0;
  for (int64_t j = 0; j < plan.k; ++j) {
    const int64_t at = t * plan.k + j;
    const int64_t index = indices.dtype == program::I64 ? indices.as<int64_t>()[at]
                                                        : indices.as<int32_t>()[at];
    const int64_t size = data.shape[static_cast<size_t>(j)];
    if (index < -size || index >= size)
      return Status::error("scatter_nd: index " + std::to_string(index) + " of tuple " +
                           std::to_string(t) + " is out of range for dim " + std::to_string(j) +
                           " of data " + data.describe());
    *offset = *offset * size + (index < 0 ? index + size : index);
  }
  *offset *= plan.slice;
  return Status::ok();
}

} // namespace shardc::runtime::cpu
