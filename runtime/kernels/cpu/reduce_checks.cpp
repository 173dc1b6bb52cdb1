#include "runtime/kernels/cpu/reduce_checks.h"

#include "runtime/kernels/cpu/checks.h"

#include <string>

namespace shardc::runtime::cpu {

Status checkReduce(const char *kernel, const KernelArgs &args, std::vector<bool> *reduced,
                   int64_t *groupSize) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  std::vector<int64_t> axes;
  int64_t keepdims = 0;
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "axes", &axes));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "keepdims", &keepdims));
  SHARDC_RETURN_IF_ERROR(expectNumeric(kernel, "x", x));
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, "x", x, "y", y));
  std::vector<int64_t> expected;
  SHARDC_RETURN_IF_ERROR(planReducedShape(kernel, x.shape, axes, keepdims != 0, reduced, &expected));
  *groupSize = 1;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if ((*reduced)[d])
      *groupSize *= x.shape[d];
  return expectShape(kernel, "y", y, expected);
}

Status checkArgMax(const KernelArgs &args, int64_t *axis, bool *selectLast) {
  SHARDC_RETURN_IF_ERROR(checkOperands("arg_max", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  int64_t keepdims = 0, last = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", axis));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "keepdims", &keepdims));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "select_last_index", &last));
  SHARDC_RETURN_IF_ERROR(expectNumeric("arg_max", "x", x));
  SHARDC_RETURN_IF_ERROR(expectDtype("arg_max", "y", y, program::I64));
  if (last != 0 && last != 1)
    return Status::error("arg_max: attribute 'select_last_index' must be 0 or 1, got " +
                         std::to_string(last));
  *selectLast = last == 1;
  std::vector<bool> reduced;
  std::vector<int64_t> expected;
  SHARDC_RETURN_IF_ERROR(
      planReducedShape("arg_max", x.shape, {*axis}, keepdims != 0, &reduced, &expected));
  if (x.shape[*axis] == 0 && y.numel() > 0)
    return Status::error("arg_max: the axis is empty: no index to return");
  return expectShape("arg_max", "y", y, expected);
}

Status planReducedShape(const char *kernel, const std::vector<int64_t> &shape,
                        const std::vector<int64_t> &axes, bool keepdims,
                        std::vector<bool> *reduced, std::vector<int64_t> *reducedShape) {
  if (axes.empty())
    return Status::error(std::string(kernel) + ": attribute 'axes' is empty");
  const int64_t rank = static_cast<int64_t>(shape.size());
  reduced->assign(shape.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axes", axes[i], rank));
    if (i > 0 && axes[i] <= axes[i - 1])
      return Status::error(std::string(kernel) +
                           ": attribute 'axes' must be sorted and without duplicates");
    (*reduced)[static_cast<size_t>(axes[i])] = true;
  }
  reducedShape->clear();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!(*reduced)[d])
      reducedShape->push_back(shape[d]);
    else if (keepdims)
      reducedShape->push_back(1);
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
