#include "runtime/kernels/cpu/grad_checks.h"

#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/reduce_checks.h"

#include <utility>

namespace shardc::runtime::cpu {

Status checkGeluGrad(const KernelArgs &args, std::string *approximate) {
  const char *kernel = "gelu_grad";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &x = args.inputs[1], &dx = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(getStringAttr(args, "approximate", approximate));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "x", x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dy", dy, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "dy", dy, x.shape));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dx", dx, program::F32));
  return expectShape(kernel, "dx", dx, x.shape);
}

Status geluGradApproximateError(const std::string &approximate) {
  return Status::error("gelu_grad: attribute 'approximate' must be \"none\" or \"tanh\", got \"" +
                       approximate + "\"");
}

Status checkClip(const KernelArgs &args, const Tensor **lo, const Tensor **hi) {
  SHARDC_RETURN_IF_ERROR(checkOperands("clip", args, Arity::withOptional(1, 2), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  auto bound = [&](size_t i) {
    return args.inputs.size() > i && args.inputs[i].present() ? &args.inputs[i] : nullptr;
  };
  *lo = bound(1);
  *hi = bound(2);
  SHARDC_RETURN_IF_ERROR(expectNumeric("clip", "x", x));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("clip", "x", x, "y", y));
  SHARDC_RETURN_IF_ERROR(expectShape("clip", "y", y, x.shape));
  for (const auto &[b, role] : {std::pair<const Tensor *, const char *>{*lo, "min"},
                                std::pair<const Tensor *, const char *>{*hi, "max"}}) {
    if (b == nullptr)
      continue;
    SHARDC_RETURN_IF_ERROR(expectSameDtype("clip", "x", x, role, *b));
    SHARDC_RETURN_IF_ERROR(expectSingleElement("clip", role, *b));
  }
  return Status::ok();
}

Status checkGlobalNorm(const KernelArgs &args) {
  const char *kernel = "global_norm";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::atLeast(1), Arity::exactly(1)));
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const std::string role = "input " + std::to_string(i);
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, role.c_str(), args.inputs[i], program::F32));
  }
  const Tensor &out = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "total_norm", out, program::F32));
  return expectShape(kernel, "total_norm", out, {});
}

Status checkScaleByClip(const KernelArgs &args, float *maxNorm) {
  const char *kernel = "scale_by_clip";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &grad = args.inputs[0], &totalNorm = args.inputs[1], &out = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "grad", grad, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "total_norm", totalNorm, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "total_norm", totalNorm, {}));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "output", out, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "output", out, grad.shape));
  return getFloatAttr(args, "max_norm", maxNorm);
}

Status checkReduceMaxGrad(const KernelArgs &args, std::vector<bool> *reduced) {
  const char *kernel = "reduce_max_grad";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(3), Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &x = args.inputs[1], &y = args.inputs[2];
  const Tensor &dx = args.outputs[0];
  std::vector<int64_t> axes;
  int64_t keepdims = 0;
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "axes", &axes));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "keepdims", &keepdims));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "x", x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "y", y, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dy", dy, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dx", dx, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "dx", dx, x.shape));
  // The axes rules and the keepdims-adjusted shape of y are reduce_max's.
  std::vector<int64_t> yShape;
  SHARDC_RETURN_IF_ERROR(planReducedShape(kernel, x.shape, axes, keepdims != 0, reduced, &yShape));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "y", y, yShape));
  return expectShape(kernel, "dy", dy, yShape);
}

} // namespace shardc::runtime::cpu
