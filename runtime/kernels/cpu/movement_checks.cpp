#include "runtime/kernels/cpu/movement_checks.h"

#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"

#include <limits>
#include <string>

namespace shardc::runtime::cpu {

namespace {

// Checks that `part` matches `whole` in dtype, rank and every dim except `axis`.
Status expectSameExceptAxis(const char *kernel, const char *role, size_t index, const Tensor &part,
                            const Tensor &whole, const char *wholeRole, size_t axis) {
  const std::string name = std::string(role) + " " + std::to_string(index);
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, name.c_str(), part, wholeRole, whole));
  bool same = part.shape.size() == whole.shape.size();
  for (size_t d = 0; same && d < part.shape.size(); ++d)
    same = d == axis || part.shape[d] == whole.shape[d];
  if (!same)
    return Status::error(std::string(kernel) + ": " + name + " " + part.describe() +
                         " does not match " + wholeRole + " " + whole.describe() +
                         " outside axis " + std::to_string(axis));
  return Status::ok();
}

} // namespace

Status checkCopy(const KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("copy", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectSameDtype("copy", "x", x, "y", y));
  if (x.numel() != y.numel())
    return Status::error("copy: y " + y.describe() + " has a different element count than x " +
                         x.describe());
  return Status::ok();
}

Status planTranspose(const KernelArgs &args, StridedLoop *loop) {
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
  *loop = StridedLoop();
  loop->numOperands = 1;
  loop->dims.resize(rank);
  loop->strides[0].resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    loop->dims[i] = x.shape[perm[i]];
    loop->strides[0][i] = xStrides[perm[i]];
  }
  SHARDC_RETURN_IF_ERROR(expectShape("transpose", "y", y, loop->dims));
  loop->coalesce();
  return Status::ok();
}

Status planSlice(const KernelArgs &args, StridedLoop *loop) {
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
  *loop = StridedLoop();
  loop->numOperands = 1;
  loop->dims = y.shape;
  loop->strides[0].resize(rank);
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
    loop->strides[0][d] = count > 1 && !empty ? steps[d] * xStrides[d] : 0;
  }
  loop->baseOffsets[0] = base;
  loop->coalesce();
  return Status::ok();
}

Status planExpand(const KernelArgs &args, StridedLoop *loop) {
  SHARDC_RETURN_IF_ERROR(checkOperands("expand", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectSameDtype("expand", "x", x, "y", y));
  Status s = planBroadcast({&x.shape}, y.shape, loop);
  if (!s)
    return Status::error("expand: " + s.message());
  return Status::ok();
}

Status checkConcat(const KernelArgs &args, size_t *axisOut) {
  SHARDC_RETURN_IF_ERROR(checkOperands("concat", args, Arity::atLeast(1), Arity::exactly(1)));
  const Tensor &y = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectAxis("concat", "axis", axis, y.rank()));
  const size_t ax = static_cast<size_t>(axis);
  int64_t total = 0;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    SHARDC_RETURN_IF_ERROR(expectSameExceptAxis("concat", "input", i, args.inputs[i], y, "y", ax));
    total += args.inputs[i].shape[ax];
  }
  if (total != y.shape[ax])
    return Status::error("concat: inputs add up to " + std::to_string(total) + " along axis " +
                         std::to_string(axis) + ", but y " + y.describe() + " has " +
                         std::to_string(y.shape[ax]));
  *axisOut = ax;
  return Status::ok();
}

Status checkSplit(const KernelArgs &args, size_t *axisOut) {
  SHARDC_RETURN_IF_ERROR(checkOperands("split", args, Arity::exactly(1), Arity::atLeast(1)));
  const Tensor &x = args.inputs[0];
  int64_t axis = 0;
  std::vector<int64_t> sizes;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "sizes", &sizes));
  SHARDC_RETURN_IF_ERROR(expectAxis("split", "axis", axis, x.rank()));
  const size_t ax = static_cast<size_t>(axis);
  if (sizes.size() != args.outputs.size())
    return Status::error("split: attribute 'sizes' has " + std::to_string(sizes.size()) +
                         " entries for " + std::to_string(args.outputs.size()) + " outputs");
  int64_t total = 0;
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    const Tensor &yi = args.outputs[i];
    SHARDC_RETURN_IF_ERROR(expectSameExceptAxis("split", "output", i, yi, x, "x", ax));
    if (sizes[i] != yi.shape[ax])
      return Status::error("split: output " + std::to_string(i) + " " + yi.describe() +
                           " does not have size " + std::to_string(sizes[i]) + " along axis " +
                           std::to_string(axis));
    total += sizes[i];
  }
  if (total != x.shape[ax])
    return Status::error("split: attribute 'sizes' " + intsString(sizes) + " adds up to " +
                         std::to_string(total) + ", but x " + x.describe() + " has " +
                         std::to_string(x.shape[ax]) + " along axis " + std::to_string(axis));
  *axisOut = ax;
  return Status::ok();
}

Status checkTrilu(const KernelArgs &args, int64_t *upper, int64_t *k) {
  SHARDC_RETURN_IF_ERROR(checkOperands("trilu", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "upper", upper));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "k", k));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("trilu", "x", x, "y", y));
  SHARDC_RETURN_IF_ERROR(expectShape("trilu", "y", y, x.shape));
  if (x.rank() < 2)
    return Status::error("trilu: x must have rank >= 2, got " + x.describe());
  return Status::ok();
}

Status checkGatherOperands(const char *kernel, const KernelArgs &args,
                           const std::vector<int64_t> &dataShape, int64_t axis,
                           const Tensor &indices, const Tensor &sliced, const char *slicedName,
                           IndexBlock *block) {
  if (indices.dtype != program::I64 && indices.dtype != program::I32)
    return Status::error(std::string(kernel) + ": indices are " + dtypeName(indices.dtype) +
                         ", expected i64 or i32");
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, static_cast<int64_t>(dataShape.size())));
  const size_t ax = static_cast<size_t>(axis);
  std::vector<int64_t> expected(dataShape.begin(), dataShape.begin() + ax);
  expected.insert(expected.end(), indices.shape.begin(), indices.shape.end());
  expected.insert(expected.end(), dataShape.begin() + ax + 1, dataShape.end());
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, slicedName, sliced, expected));
  return readIndexBlock(kernel, args, dataShape[ax], block);
}

Status gatherRowsOf(const char *kernel, int64_t axis, const IndexBlock &block,
                    const Tensor &indices, int64_t *rows) {
  const int64_t dim = block.whole;
  const int64_t count = indices.numel();
  return visitIndex(indices.dtype, [&](auto tag) {
    using I = decltype(tag);
    const I *pi = indices.as<I>();
    for (int64_t j = 0; j < count; ++j) {
      const int64_t index = static_cast<int64_t>(pi[j]);
      const int64_t row = index < 0 ? index + dim : index;
      if (row < 0 || row >= dim)
        return Status::error(std::string(kernel) + ": index " + std::to_string(index) +
                             " is out of range for axis " + std::to_string(axis) + " of size " +
                             std::to_string(dim) + (block.split ? " (index_size)" : ""));
      rows[j] = block.holds(row) ? row - block.offset : -1;
    }
    return Status::ok();
  });
}

} // namespace shardc::runtime::cpu
