#include "runtime/kernels/cpu/optimizer_checks.h"

#include "runtime/kernels/cpu/checks.h"

#include <vector>

namespace shardc::runtime::cpu {

namespace {

// Checks that `t` is an f32 tensor of `shape`.
Status expectF32Shape(const char *kernel, const char *role, const Tensor &t,
                      const std::vector<int64_t> &shape) {
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, role, t, program::F32));
  return expectShape(kernel, role, t, shape);
}

Status checkStepLrSkip(const char *kernel, const KernelArgs &args, size_t stepIndex) {
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "step", args.inputs[stepIndex], program::I64));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "step", args.inputs[stepIndex], {}));
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "lr", args.inputs[stepIndex + 1], {}));
  if (hasSkip(args, stepIndex + 2))
    SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "skip", args.inputs[stepIndex + 2], {}));
  return Status::ok();
}

} // namespace

bool hasSkip(const KernelArgs &args, size_t index) {
  return args.inputs.size() > index && args.inputs[index].present();
}

Status checkAdamw(const KernelArgs &args, AdamwAttrs *attrs) {
  const char *kernel = "adamw_update";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::withOptional(6, 1), Arity::exactly(3)));
  const Tensor &param = args.inputs[0];
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "param", param, program::F32));
  const std::vector<int64_t> &shape = param.shape;
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "grad", args.inputs[1], shape));
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "exp_avg", args.inputs[2], shape));
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "exp_avg_sq", args.inputs[3], shape));
  SHARDC_RETURN_IF_ERROR(checkStepLrSkip(kernel, args, 4));
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "new_param", args.outputs[0], shape));
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "new_exp_avg", args.outputs[1], shape));
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "new_exp_avg_sq", args.outputs[2], shape));
  SHARDC_RETURN_IF_ERROR(getDoubleAttr(args, "beta1", &attrs->beta1));
  SHARDC_RETURN_IF_ERROR(getDoubleAttr(args, "beta2", &attrs->beta2));
  SHARDC_RETURN_IF_ERROR(getDoubleAttr(args, "eps", &attrs->eps));
  return getDoubleAttr(args, "weight_decay", &attrs->weightDecay);
}

Status checkSgd(const KernelArgs &args, SgdAttrs *attrs) {
  const char *kernel = "sgd_update";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::withOptional(5, 1), Arity::exactly(2)));
  const Tensor &param = args.inputs[0];
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "param", param, program::F32));
  const std::vector<int64_t> &shape = param.shape;
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "grad", args.inputs[1], shape));
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "momentum_buffer", args.inputs[2], shape));
  SHARDC_RETURN_IF_ERROR(checkStepLrSkip(kernel, args, 3));
  SHARDC_RETURN_IF_ERROR(expectF32Shape(kernel, "new_param", args.outputs[0], shape));
  SHARDC_RETURN_IF_ERROR(
      expectF32Shape(kernel, "new_momentum_buffer", args.outputs[1], shape));
  SHARDC_RETURN_IF_ERROR(getDoubleAttr(args, "momentum", &attrs->momentum));
  SHARDC_RETURN_IF_ERROR(getDoubleAttr(args, "dampening", &attrs->dampening));
  SHARDC_RETURN_IF_ERROR(getDoubleAttr(args, "weight_decay", &attrs->weightDecay));
  return getIntAttr(args, "nesterov", &attrs->nesterov);
}

} // namespace shardc::runtime::cpu
