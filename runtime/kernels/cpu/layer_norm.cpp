// layer_norm: ONNX LayerNormalization with stash_type float.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/norm_checks.h"
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
  LayerNormPlan plan;
  SHARDC_RETURN_IF_ERROR(checkLayerNorm(args, &plan));
  const Tensor &x = args.inputs[0], &scale = args.inputs[1], &y = args.outputs[0];
  const Tensor absent;
  const Tensor &bias = args.inputs.size() > 2 ? args.inputs[2] : absent;
  const Tensor &meanOut = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &invStdOut = args.outputs.size() > 2 ? args.outputs[2] : absent;
  const float epsilon = plan.epsilon;
  const int64_t normSize = plan.normSize, rows = plan.rows;

  Workspace workspace(args);
  Scratch scratch;
  SHARDC_RETURN_IF_ERROR(takeScratch(workspace, scale, bias, normSize, &scratch));
  // scale and bias densely over the normalised dims (dense ones are read in place).
  const float *scaleData = scale.as<float>(), *biasData = nullptr;
  if (scale.numel() != normSize) {
    copyStrided(scale.as<float>(), scratch.scale, plan.scaleLoop);
    scaleData = scratch.scale;
  }
  if (bias.present()) {
    biasData = bias.as<float>();
    if (bias.numel() != normSize) {
      copyStrided(bias.as<float>(), scratch.bias, plan.biasLoop);
      biasData = scratch.bias;
    }
  }

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
