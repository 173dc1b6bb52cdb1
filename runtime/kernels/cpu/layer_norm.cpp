// layer_norm: ONNX LayerNormalization with stash_type float.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <cmath>

namespace shardc::runtime::cpu {

namespace {

// Sum of `values` in double, with four independent accumulators so the additions pipeline
// instead of waiting on each other; `shift` is subtracted from each value and the difference
// squared when `squared` is set (the variance pass).
double accumulate(const float *values, int64_t n, double shift, bool squared) {
  double acc[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int lane = 0; lane < 4; ++lane) {
      const double d = static_cast<double>(values[i + lane]) - shift;
      acc[lane] += squared ? d * d : d;
    }
  }
  for (; i < n; ++i) {
    const double d = static_cast<double>(values[i]) - shift;
    acc[0] += squared ? d * d : d;
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// Returns `param` laid out densely over the normalised dims, expanding it into `storage` (the
// workspace piece of normSize floats taken for it) when it is broadcast; a dense one is used in
// place.
Status denseParam(const char *role, const Tensor &param, const std::vector<int64_t> &normShape,
                  int64_t normSize, float *storage, const float **out) {
  SHARDC_RETURN_IF_ERROR(expectDtype("layer_norm", role, param, program::F32));
  StridedLoop loop;
  Status s = planBroadcast({&param.shape}, normShape, &loop);
  if (!s)
    return Status::error(std::string("layer_norm: ") + role + ": " + s.message());
  if (param.numel() == normSize) {
    *out = param.as<float>();
    return Status::ok();
  }
  copyStrided(param.as<float>(), storage, loop);
  *out = storage;
  return Status::ok();
}

// The workspace of layer_norm: a dense copy of scale, and of bias, when they broadcast.
struct Scratch {
  float *scale = nullptr;
  float *bias = nullptr;
};

Status takeScratch(Workspace &workspace, const Tensor &scale, const Tensor &bias, int64_t normSize,
                   Scratch *scratch) {
  if (scale.numel() != normSize)
    SHARDC_RETURN_IF_ERROR(workspace.take("layer_norm", normSize, &scratch->scale));
  if (bias.present() && bias.numel() != normSize)
    SHARDC_RETURN_IF_ERROR(workspace.take("layer_norm", normSize, &scratch->bias));
  return Status::ok();
}

} // namespace

Status layerNormWorkspace(const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(
      checkOperands("layer_norm", args, Arity::withOptional(2, 1), Arity::withOptional(1, 2)));
  const Tensor &x = args.inputs[0], &scale = args.inputs[1];
  const Tensor absent;
  const Tensor &bias = args.inputs.size() > 2 ? args.inputs[2] : absent;
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectAxis("layer_norm", "axis", axis, x.rank()));
  const int64_t normSize = dimsProduct(x.shape, static_cast<size_t>(axis), x.shape.size());
  Scratch scratch;
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    return takeScratch(workspace, scale, bias, normSize, &scratch);
  });
}

Status layerNormKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(
      checkOperands("layer_norm", args, Arity::withOptional(2, 1), Arity::withOptional(1, 2)));
  const Tensor &x = args.inputs[0], &scale = args.inputs[1], &y = args.outputs[0];
  const Tensor absent;
  const Tensor &bias = args.inputs.size() > 2 ? args.inputs[2] : absent;
  const Tensor &meanOut = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &invStdOut = args.outputs.size() > 2 ? args.outputs[2] : absent;
  int64_t axis = 0;
  float epsilon = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(getFloatAttr(args, "epsilon", &epsilon));
  SHARDC_RETURN_IF_ERROR(expectDtype("layer_norm", "x", x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectAxis("layer_norm", "axis", axis, x.rank()));
  SHARDC_RETURN_IF_ERROR(expectDtype("layer_norm", "y", y, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape("layer_norm", "y", y, x.shape));

  const std::vector<int64_t> normShape(x.shape.begin() + axis, x.shape.end());
  const int64_t normSize = dimsProduct(x.shape, static_cast<size_t>(axis), x.shape.size());
  const int64_t rows = dimsProduct(x.shape, 0, static_cast<size_t>(axis));
  std::vector<int64_t> statsShape = x.shape;
  std::fill(statsShape.begin() + axis, statsShape.end(), 1);
  for (const auto &[stat, role] :
       {std::pair<const Tensor *, const char *>{&meanOut, "mean"},
        std::pair<const Tensor *, const char *>{&invStdOut, "inv_std_dev"}}) {
    if (!stat->present())
      continue;
    SHARDC_RETURN_IF_ERROR(expectDtype("layer_norm", role, *stat, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape("layer_norm", role, *stat, statsShape));
  }

  Workspace workspace(args);
  Scratch scratch;
  SHARDC_RETURN_IF_ERROR(takeScratch(workspace, scale, bias, normSize, &scratch));
  const float *scaleData = nullptr, *biasData = nullptr;
  SHARDC_RETURN_IF_ERROR(
      denseParam("scale", scale, normShape, normSize, scratch.scale, &scaleData));
  if (bias.present())
    SHARDC_RETURN_IF_ERROR(denseParam("bias", bias, normShape, normSize, scratch.bias, &biasData));

  const float *px = x.as<float>();
  float *py = y.as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = px + r * normSize;
    float *out = py + r * normSize;
    // Two passes (mean, then mean squared deviation) are more accurate than E[x^2] - E[x]^2.
    const double mean = accumulate(row, normSize, 0.0, false) / static_cast<double>(normSize);
    const double var = accumulate(row, normSize, mean, true) / static_cast<double>(normSize);
    // The outputs, and y itself, use the float values of the statistics, as ONNX computes them
    // in float (stash_type 1).
    const float meanF = static_cast<float>(mean);
    const float invStdF = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(epsilon)));
    if (biasData) {
      for (int64_t i = 0; i < normSize; ++i)
        out[i] = (row[i] - meanF) * invStdF * scaleData[i] + biasData[i];
    } else {
      for (int64_t i = 0; i < normSize; ++i)
        out[i] = (row[i] - meanF) * invStdF * scaleData[i];
    }
    if (meanOut.present())
      meanOut.as<float>()[r] = meanF;
    if (invStdOut.present())
      invStdOut.as<float>()[r] = invStdF;
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
