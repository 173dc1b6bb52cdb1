#include "runtime/kernels/cpu/elementwise_checks.h"

#include "runtime/kernels/cpu/checks.h"

namespace shardc::runtime::cpu {

Status checkUnary(const char *kernel, const KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0];
  const Tensor &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, "x", x, "y", y));
  return expectShape(kernel, "y", y, x.shape);
}

Status checkFloatUnary(const char *kernel, const KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkUnary(kernel, args));
  return expectDtype(kernel, "x", args.inputs[0], program::F32);
}

Status checkNumericUnary(const char *kernel, const KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkUnary(kernel, args));
  return expectNumeric(kernel, "x", args.inputs[0]);
}

Status checkBinary(const char *kernel, const KernelArgs &args, StridedLoop *loop) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  return planElementwise(kernel, {&args.inputs[0], &args.inputs[1]}, args.outputs[0], loop);
}

Status checkNumericBinary(const char *kernel, const KernelArgs &args, StridedLoop *loop) {
  SHARDC_RETURN_IF_ERROR(checkBinary(kernel, args, loop));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectNumeric(kernel, "a", a));
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, "a", a, "b", b));
  return expectSameDtype(kernel, "a", a, "y", y);
}

Status checkMod(const KernelArgs &args, StridedLoop *loop, bool *fmod) {
  SHARDC_RETURN_IF_ERROR(checkNumericBinary("mod", args, loop));
  int64_t value = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "fmod", &value));
  if (value != 0 && value != 1)
    return Status::error("mod: attribute 'fmod' must be 0 or 1, got " + std::to_string(value));
  if (value == 0 && args.inputs[0].dtype == program::F32)
    return Status::error("mod: f32 operands need fmod = 1");
  *fmod = value == 1;
  return Status::ok();
}

Status checkComparison(const char *kernel, const KernelArgs &args, bool allowBool,
                       StridedLoop *loop) {
  SHARDC_RETURN_IF_ERROR(checkBinary(kernel, args, loop));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  if (!(allowBool && a.dtype == program::BOOL))
    SHARDC_RETURN_IF_ERROR(expectNumeric(kernel, "a", a));
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, "a", a, "b", b));
  return expectDtype(kernel, "y", y, program::BOOL);
}

Status checkLogical(const char *kernel, const KernelArgs &args, StridedLoop *loop) {
  SHARDC_RETURN_IF_ERROR(checkBinary(kernel, args, loop));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "a", args.inputs[0], program::BOOL));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "b", args.inputs[1], program::BOOL));
  return expectDtype(kernel, "y", args.outputs[0], program::BOOL);
}

Status checkWhere(const KernelArgs &args, StridedLoop *loop) {
  SHARDC_RETURN_IF_ERROR(checkOperands("where", args, Arity::exactly(3), Arity::exactly(1)));
  const Tensor &cond = args.inputs[0], &x = args.inputs[1], &y = args.inputs[2];
  const Tensor &z = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectDtype("where", "cond", cond, program::BOOL));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("where", "x", x, "y", y));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("where", "x", x, "z", z));
  return planElementwise("where", {&cond, &x, &y}, z, loop);
}

Status checkCast(const KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("cast", args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  int64_t to = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "to", &to));
  if (to != static_cast<int64_t>(y.dtype))
    return Status::error("cast: attribute 'to' = " + std::to_string(to) +
                         " does not match the output dtype " + dtypeName(y.dtype));
  return expectShape("cast", "y", y, x.shape);
}

} // namespace shardc::runtime::cpu
