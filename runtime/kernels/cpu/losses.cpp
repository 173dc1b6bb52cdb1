// softmax_cross_entropy_loss and nll_loss with ONNX semantics (SoftmaxCrossEntropyLoss and
// NegativeLogLikelihoodLoss): per-element loss -log_prob[n, t, d] * weight[t], zero for ignored
// targets; `mean` divides the sum by the summed weights of the targets that are not ignored
// (their count when there are no weights), `sum` sums, `none` keeps the [N, d1..] losses.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/loss_operands.h"
#include "runtime/kernels/cpu/softmax.h"

#include <vector>

namespace shardc::runtime::cpu {

namespace {

// Writes the (reduced) weighted negative log likelihood of `target` under `logProb`.
Status weightedNll(const char *kernel, const float *logProb, const Tensor &target,
                   const Tensor &weight, const LossSpec &spec, const Tensor &loss) {
  const float *pw = weight.present() ? weight.as<float>() : nullptr;
  float *out = loss.as<float>();
  double lossSum = 0.0, weightSum = 0.0;
  Status s = visitIndex(target.dtype, [&](auto tag) {
    using I = decltype(tag);
    const I *pt = target.as<I>();
    for (int64_t n = 0; n < spec.n; ++n) {
      for (int64_t d = 0; d < spec.d; ++d) {
        const int64_t t = static_cast<int64_t>(pt[n * spec.d + d]);
        float elementLoss = 0.0f;
        if (!(spec.hasIgnoreIndex && t == spec.ignoreIndex)) {
          if (t < 0 || t >= spec.c)
            return Status::error(std::string(kernel) + ": target " + std::to_string(t) +
                                 " is out of range for " + std::to_string(spec.c) + " classes");
          const float w = pw ? pw[t] : 1.0f;
          // In float, as the ONNX reference multiplies its float tensors.
          elementLoss = -logProb[(n * spec.c + t) * spec.d + d] * w;
          weightSum += w;
        }
        if (spec.reduction == LossReduction::None)
          out[n * spec.d + d] = elementLoss;
        lossSum += elementLoss;
      }
    }
    return Status::ok();
  });
  SHARDC_RETURN_IF_ERROR(s);
  if (spec.reduction == LossReduction::Sum)
    out[0] = static_cast<float>(lossSum);
  else if (spec.reduction == LossReduction::Mean)
    out[0] = static_cast<float>(lossSum / weightSum); // 0/0 = NaN when everything is ignored
  return Status::ok();
}

} // namespace

Status softmaxCrossEntropyLossKernel(KernelArgs &args) {
  const char *kernel = "softmax_cross_entropy_loss";
  SHARDC_RETURN_IF_ERROR(
      checkOperands(kernel, args, Arity::withOptional(2, 1), Arity::withOptional(1, 1)));
  const Tensor absent;
  const Tensor &scores = args.inputs[0], &labels = args.inputs[1];
  const Tensor &weights = args.inputs.size() > 2 ? args.inputs[2] : absent;
  const Tensor &loss = args.outputs[0];
  const Tensor &logProbOut = args.outputs.size() > 1 ? args.outputs[1] : absent;
  LossSpec spec;
  SHARDC_RETURN_IF_ERROR(
      checkLossOperands(kernel, args, scores, "input", labels, weights, loss, "loss", &spec));
  if (logProbOut.present()) {
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "log_prob", logProbOut, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, "log_prob", logProbOut, scores.shape));
  }
  // log_prob goes to its output when requested, else to scratch memory.
  std::vector<float> scratch;
  float *logProb = logProbOut.present() ? logProbOut.as<float>() : nullptr;
  if (!logProb) {
    scratch.resize(static_cast<size_t>(scores.numel()));
    logProb = scratch.data();
  }
  softmaxAlongAxis(scores.as<float>(), logProb, spec.n, spec.c, spec.d, /*logOutput=*/true);
  return weightedNll(kernel, logProb, labels, weights, spec, loss);
}

Status nllLossKernel(KernelArgs &args) {
  const char *kernel = "nll_loss";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::withOptional(2, 1), Arity::exactly(1)));
  const Tensor absent;
  const Tensor &input = args.inputs[0], &target = args.inputs[1];
  const Tensor &weight = args.inputs.size() > 2 ? args.inputs[2] : absent;
  const Tensor &loss = args.outputs[0];
  LossSpec spec;
  SHARDC_RETURN_IF_ERROR(
      checkLossOperands(kernel, args, input, "input", target, weight, loss, "loss", &spec));
  return weightedNll(kernel, input.as<float>(), target, weight, spec, loss);
}

} // namespace shardc::runtime::cpu
