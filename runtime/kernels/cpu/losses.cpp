// softmax_cross_entropy_loss and nll_loss with ONNX semantics (SoftmaxCrossEntropyLoss and
// NegativeLogLikelihoodLoss): per-element loss -log_prob[n, t, d] * weight[t], zero for ignored
// targets; `mean` divides the sum by the summed weights of the targets that are not ignored
// (their count when there are no weights), `sum` sums, `none` keeps the [N, d1..] losses.
// nll_loss may hold only an index block of the classes (index_block.h; no weights then): a
// target another block holds adds 0 to the sum but still counts in the mean's denominator, so
// the blocks' losses sum to the whole. softmax_cross_entropy_loss needs whole rows for its
// softmax, so it refuses a block.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/index_block.h"
#include "runtime/kernels/cpu/loss_operands.h"
#include "runtime/kernels/cpu/softmax.h"
#include "runtime/kernels/cpu/workspace.h"

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
          if (t < 0 || t >= spec.classesWhole)
            return Status::error(std::string(kernel) + ": target " + std::to_string(t) +
                                 " is out of range for " + std::to_string(spec.classesWhole) +
                                 " classes");
          const float w = pw ? pw[t] : 1.0f;
          const int64_t local = t - spec.classOffset;
          // In float, as the ONNX reference multiplies its float tensors.
          if (local >= 0 && local < spec.c)
            elementLoss = -logProb[(n * spec.c + local) * spec.d + d] * w;
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

constexpr const char *kSoftmaxCrossEntropy = "softmax_cross_entropy_loss";

// The workspace of softmax_cross_entropy_loss: log_prob when it is not an output, then the
// softmax's own scratch.
struct CrossEntropyScratch {
  float *logProb = nullptr;
  SoftmaxScratch softmax;
};

Status takeCrossEntropyScratch(Workspace &workspace, const CrossEntropyOperands &ops,
                               CrossEntropyScratch *scratch) {
  if (!ops.logProbOut->present())
    SHARDC_RETURN_IF_ERROR(
        workspace.take(kSoftmaxCrossEntropy, ops.scores->numel(), &scratch->logProb));
  return takeSoftmaxScratch(kSoftmaxCrossEntropy, workspace, ops.spec.d, &scratch->softmax);
}

} // namespace

Status softmaxCrossEntropyLossWorkspace(const KernelArgs &args, uint64_t *bytes) {
  CrossEntropyOperands ops;
  SHARDC_RETURN_IF_ERROR(checkCrossEntropyOperands(args, &ops));
  CrossEntropyScratch scratch;
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    return takeCrossEntropyScratch(workspace, ops, &scratch);
  });
}

Status softmaxCrossEntropyLossKernel(KernelArgs &args) {
  CrossEntropyOperands ops;
  SHARDC_RETURN_IF_ERROR(checkCrossEntropyOperands(args, &ops));
  Workspace workspace(args);
  CrossEntropyScratch scratch;
  SHARDC_RETURN_IF_ERROR(takeCrossEntropyScratch(workspace, ops, &scratch));
  // log_prob goes to its output when requested, else to the workspace.
  float *logProb = ops.logProbOut->present() ? ops.logProbOut->as<float>() : scratch.logProb;
  const LossSpec &spec = ops.spec;
  softmaxAlongAxis(ops.scores->as<float>(), logProb, spec.n, spec.c, spec.d, /*logOutput=*/true,
                   scratch.softmax);
  return weightedNll(kSoftmaxCrossEntropy, logProb, *ops.labels, *ops.weights, spec, *ops.loss);
}

Status nllLossKernel(KernelArgs &args) {
  const char *kernel = "nll_loss";
  LossSpec spec;
  SHARDC_RETURN_IF_ERROR(checkNllLossOperands(args, &spec));
  const Tensor absent;
  const Tensor &input = args.inputs[0], &target = args.inputs[1];
  const Tensor &weight = args.inputs.size() > 2 ? args.inputs[2] : absent;
  const Tensor &loss = args.outputs[0];
  return weightedNll(kernel, input.as<float>(), target, weight, spec, loss);
}

} // namespace shardc::runtime::cpu
