// softmax_cross_entropy_loss_grad and nll_loss_grad: the backwards of the loss kernels in
// losses.cpp, with the same attributes and the same reading of them. Per target position
// (n, d) with class t = target[n, d] and weight w = weight[t] (1 without weights):
//   ignored position:  zero gradient for every class
//   otherwise:         coeff = w * g, where g is dloss[n, d] (`none`), dloss (`sum`), or
//                      dloss / W (`mean`, W = summed weights of the non-ignored positions, the
//                      forward's denominator, recomputed here from target and weight)
//   nll_loss:                    dinput[n, c, d]  = -coeff for c == t, else 0
//   softmax_cross_entropy_loss:  dscores[n, c, d] = (exp(log_prob[n, c, d]) - [c == t]) * coeff
// With `mean` and every position ignored the forward is 0/0 = NaN; no position contributes, so
// the gradient is all zeros.
//
// With an index block of the classes (index_block.h; no weights then) the gradient output holds
// classes [classOffset, classOffset + C) of the whole: the [c == t] term is written only when
// this block holds t, and W still counts every non-ignored position, so the blocks' gradients
// concatenate to the whole.
//
// The attribute and shape checks are the forward's (loss_operands.h), with the gradient
// operands in place of the forward's input and loss.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/loss_operands.h"
#include "runtime/kernels/cpu/vector_dispatch.h"
#include "runtime/kernels/cpu/vector_math.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace shardc::runtime::cpu {

namespace {

// The workspace of both backwards: the class of each of the n * d target positions.
Status takeClasses(const char *kernel, Workspace &workspace, const LossSpec &spec,
                   int64_t **classes) {
  return workspace.take(kernel, spec.n * spec.d, classes);
}

// The class of each target position, or -1 where it is ignored; range-checked like the forward
// before any output is written. Also returns the mean's denominator.
Status readTargets(const char *kernel, const Tensor &target, const Tensor &weight,
                   const LossSpec &spec, int64_t *classes, double *weightSum) {
  const float *pw = weight.present() ? weight.as<float>() : nullptr;
  const int64_t count = spec.n * spec.d;
  *weightSum = 0.0;
  return visitIndex(target.dtype, [&](auto tag) {
    using I = decltype(tag);
    const I *pt = target.as<I>();
    for (int64_t k = 0; k < count; ++k) {
      const int64_t t = static_cast<int64_t>(pt[k]);
      if (spec.hasIgnoreIndex && t == spec.ignoreIndex) {
        classes[k] = -1;
        continue;
      }
      if (t < 0 || t >= spec.classesWhole)
        return Status::error(std::string(kernel) + ": target " + std::to_string(t) +
                             " is out of range for " + std::to_string(spec.classesWhole) +
                             " classes");
      classes[k] = t;
      *weightSum += pw ? pw[t] : 1.0f;
    }
    return Status::ok();
  });
}

// Calls `position(n, d, t, coeff)` for every non-ignored target position, with coeff the
// derivative of the reduced loss with respect to that position's -log_prob[n, t, d]; t is the
// class within this block of classes, outside [0, c) where another block holds it. The rows n
// are split over the kernel threads: `position` writes row n's elements only.
template <typename Fn>
Status forEachTarget(const char *kernel, const KernelArgs &args, const Tensor &dloss,
                     const Tensor &target, const Tensor &weight, const LossSpec &spec,
                     Fn position) {
  Workspace workspace(args);
  int64_t *classes = nullptr;
  SHARDC_RETURN_IF_ERROR(takeClasses(kernel, workspace, spec, &classes));
  double weightSum = 0.0;
  SHARDC_RETURN_IF_ERROR(readTargets(kernel, target, weight, spec, classes, &weightSum));
  const float *pw = weight.present() ? weight.as<float>() : nullptr;
  const float *pg = dloss.as<float>();
  double scalar = 0.0;
  if (spec.reduction == LossReduction::Sum)
    scalar = pg[0];
  else if (spec.reduction == LossReduction::Mean)
    scalar = static_cast<double>(pg[0]) / weightSum; // unused when weightSum is 0
  const int64_t rowElements = std::max<int64_t>(spec.c * spec.d, 1);
  parallelFor(spec.n, kElementsPerThread / rowElements, [&](int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n) {
      for (int64_t d = 0; d < spec.d; ++d) {
        const int64_t k = n * spec.d + d;
        const int64_t t = classes[k];
        if (t < 0)
          continue;
        const double g = spec.reduction == LossReduction::None ? pg[k] : scalar;
        const double w = pw ? pw[t] : 1.0;
        position(n, d, t - spec.classOffset, w * g);
      }
    }
  });
  return Status::ok();
}

// A backward's workspace size: its operands and attributes checked as the kernel checks them
// (dloss is input 0, the targets input `targetIndex`, the gradient output 0), then the classes.
Status lossGradWorkspace(const char *kernel, const KernelArgs &args, Arity inputs, int targetIndex,
                         uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, inputs, Arity::exactly(1)));
  const Tensor absent;
  const size_t weightIndex = static_cast<size_t>(targetIndex) + 1;
  const Tensor &weight = args.inputs.size() > weightIndex ? args.inputs[weightIndex] : absent;
  LossSpec spec;
  SHARDC_RETURN_IF_ERROR(checkLossOperands(kernel, args, args.outputs[0], "gradient output",
                                           args.inputs[static_cast<size_t>(targetIndex)], weight,
                                           args.inputs[0], "dloss", &spec));
  int64_t *classes = nullptr;
  return measureWorkspace(
      bytes, [&](Workspace &workspace) { return takeClasses(kernel, workspace, spec, &classes); });
}

} // namespace

Status softmaxCrossEntropyLossGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return lossGradWorkspace("softmax_cross_entropy_loss_grad", args, Arity::withOptional(3, 1),
                           /*targetIndex=*/2, bytes);
}

Status nllLossGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return lossGradWorkspace("nll_loss_grad", args, Arity::withOptional(2, 1), /*targetIndex=*/1,
                           bytes);
}

Status softmaxCrossEntropyLossGradKernel(KernelArgs &args) {
  const char *kernel = "softmax_cross_entropy_loss_grad";
  LossSpec spec;
  SHARDC_RETURN_IF_ERROR(checkLossGradOperands(kernel, args, /*withLogProb=*/true, &spec));
  const Tensor absent;
  const Tensor &dloss = args.inputs[0], &logProb = args.inputs[1], &labels = args.inputs[2];
  const Tensor &weights = args.inputs.size() > 3 ? args.inputs[3] : absent;
  const Tensor &dscores = args.outputs[0];
  // Ignored positions keep zeros, so the output starts zeroed and only non-ignored positions
  // are filled in.
  float *out = dscores.as<float>();
  const float *lp = logProb.as<float>();
  if (dscores.sizeBytes() > 0)
    std::memset(out, 0, dscores.sizeBytes());
  // exp in double, vectorised along the classes. A log-probability below -700 is taken as
  // -700: e^-700 (1e-304) times any coefficient below 1e260 rounds to a float 0, as libm's
  // exp(x) does there; NaN stays NaN.
  return forEachTarget(kernel, args, dloss, labels, weights, spec,
                       [&](int64_t n, int64_t d, int64_t t, double coeff) {
                         const float *row = lp + n * spec.c * spec.d + d;
                         float *rowOut = out + n * spec.c * spec.d + d;
                         const int64_t stride = spec.d;
                         vectorLoop(0, spec.c, [&](int64_t c) {
                           const double x = static_cast<double>(row[c * stride]);
                           const double clamped = x > -700.0 ? (x < 700.0 ? x : 700.0) : -700.0;
                           const double p = x != x ? x : vectorExpDouble(clamped);
                           rowOut[c * stride] =
                               static_cast<float>((p - (c == t ? 1.0 : 0.0)) * coeff);
                         });
                       });
}

Status nllLossGradKernel(KernelArgs &args) {
  const char *kernel = "nll_loss_grad";
  LossSpec spec;
  SHARDC_RETURN_IF_ERROR(checkLossGradOperands(kernel, args, /*withLogProb=*/false, &spec));
  const Tensor absent;
  const Tensor &dloss = args.inputs[0], &target = args.inputs[1];
  const Tensor &weight = args.inputs.size() > 2 ? args.inputs[2] : absent;
  const Tensor &dinput = args.outputs[0];
  float *out = dinput.as<float>();
  if (dinput.sizeBytes() > 0)
    std::memset(out, 0, dinput.sizeBytes());
  return forEachTarget(kernel, args, dloss, target, weight, spec,
                       [&](int64_t n, int64_t d, int64_t t, double coeff) {
                         if (t >= 0 && t < spec.c)
                           out[(n * spec.c + t) * spec.d + d] = static_cast<float>(-coeff);
                       });
}

} // namespace shardc::runtime::cpu
