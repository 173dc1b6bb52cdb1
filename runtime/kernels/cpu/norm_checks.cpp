// Shared operand checks of the softmax and layer_norm kernels and their backwards.
#include "runtime/kernels/cpu/norm_checks.h"

#include "runtime/kernels/cpu/checks.h"

#include <algorithm>
#include <string>

namespace shardc::runtime::cpu {

namespace {

void axisSizes(const std::vector<int64_t> &shape, int64_t axis, AxisSizes *sizes) {
  const size_t ax = static_cast<size_t>(axis);
  sizes->outer = dimsProduct(shape, 0, ax);
  sizes->dim = shape[ax];
  sizes->inner = dimsProduct(shape, ax + 1, shape.size());
}

// Plans the walk of the normalised dims that reads `param` at each position.
Status planParam(const char *kernel, const char *role, const Tensor &param,
                 const std::vector<int64_t> &normShape, StridedLoop *loop) {
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, role, param, program::F32));
  Status s = planBroadcast({&param.shape}, normShape, loop);
  if (!s)
    return Status::error(std::string(kernel) + ": " + role + ": " + s.message());
  return Status::ok();
}

void normSizes(const Tensor &x, int64_t axis, LayerNormPlan *plan) {
  plan->normShape.assign(x.shape.begin() + axis, x.shape.end());
  plan->normSize = dimsProduct(x.shape, static_cast<size_t>(axis), x.shape.size());
  plan->rows = dimsProduct(x.shape, 0, static_cast<size_t>(axis));
}

std::vector<int64_t> statsShape(const Tensor &x, int64_t axis) {
  std::vector<int64_t> shape = x.shape;
  std::fill(shape.begin() + axis, shape.end(), 1);
  return shape;
}

} // namespace

Status checkSoftmax(const char *kernel, const KernelArgs &args, AxisSizes *sizes) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "x", x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "y", y, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "y", y, x.shape));
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, x.rank()));
  axisSizes(x.shape, axis, sizes);
  return Status::ok();
}

Status checkSoftmaxGrad(const char *kernel, const KernelArgs &args, AxisSizes *sizes) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &y = args.inputs[1], &dx = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dy", dy, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "y", y, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "y", y, dy.shape));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dx", dx, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "dx", dx, dy.shape));
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, dy.rank()));
  axisSizes(dy.shape, axis, sizes);
  return Status::ok();
}

Status checkLayerNorm(const KernelArgs &args, LayerNormPlan *plan) {
  const char *kernel = "layer_norm";
  SHARDC_RETURN_IF_ERROR(
      checkOperands(kernel, args, Arity::withOptional(2, 1), Arity::withOptional(1, 2)));
  const Tensor &x = args.inputs[0], &scale = args.inputs[1], &y = args.outputs[0];
  const Tensor absent;
  const Tensor &bias = args.inputs.size() > 2 ? args.inputs[2] : absent;
  const Tensor &meanOut = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &invStdOut = args.outputs.size() > 2 ? args.outputs[2] : absent;
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(getFloatAttr(args, "epsilon", &plan->epsilon));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "x", x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, x.rank()));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "y", y, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "y", y, x.shape));
  normSizes(x, axis, plan);
  const std::vector<int64_t> stats = statsShape(x, axis);
  for (const auto &[stat, role] :
       {std::pair<const Tensor *, const char *>{&meanOut, "mean"},
        std::pair<const Tensor *, const char *>{&invStdOut, "inv_std_dev"}}) {
    if (!stat->present())
      continue;
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, role, *stat, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, role, *stat, stats));
  }
  SHARDC_RETURN_IF_ERROR(planParam(kernel, "scale", scale, plan->normShape, &plan->scaleLoop));
  if (bias.present())
    SHARDC_RETURN_IF_ERROR(planParam(kernel, "bias", bias, plan->normShape, &plan->biasLoop));
  return Status::ok();
}

Status checkLayerNormGrad(const KernelArgs &args, LayerNormPlan *plan) {
  const char *kernel = "layer_norm_grad";
  SHARDC_RETURN_IF_ERROR(
      checkOperands(kernel, args, Arity::exactly(5), Arity::withOptional(0, 3)));
  const Tensor &dy = args.inputs[0], &x = args.inputs[1], &scale = args.inputs[2];
  const Tensor &mean = args.inputs[3], &invStd = args.inputs[4];
  const Tensor absent;
  const Tensor &dx = args.outputs.size() > 0 ? args.outputs[0] : absent;
  const Tensor &dscale = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &dbias = args.outputs.size() > 2 ? args.outputs[2] : absent;
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "x", x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, x.rank()));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dy", dy, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "dy", dy, x.shape));
  const std::vector<int64_t> stats = statsShape(x, axis);
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "mean", mean, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "mean", mean, stats));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "inv_std_dev", invStd, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "inv_std_dev", invStd, stats));
  normSizes(x, axis, plan);
  SHARDC_RETURN_IF_ERROR(planParam(kernel, "scale", scale, plan->normShape, &plan->scaleLoop));
  if (dx.present()) {
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dx", dx, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, "dx", dx, x.shape));
  }
  if (dscale.present()) {
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dscale", dscale, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, "dscale", dscale, scale.shape));
  }
  // The forward bias may broadcast differently from scale, so dbias takes its shape from the
  // output tensor (anything that broadcasts to the normalised dims).
  if (dbias.present())
    SHARDC_RETURN_IF_ERROR(planParam(kernel, "dbias", dbias, plan->normShape, &plan->biasLoop));
  return Status::ok();
}

} // namespace shardc::runtime::cpu
