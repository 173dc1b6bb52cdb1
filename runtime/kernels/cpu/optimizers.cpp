// adamw_update and sgd_update: one optimizer step for one parameter tensor, reproducing
// torch.optim.AdamW / torch.optim.SGD of torch 1.13 (single-tensor path, foreach=False,
// maximize=False, amsgrad=False, capturable=False) bit for bit, so that training here and in
// PyTorch stays on the same trajectory.
//
// How torch rounds, and so how these loops round:
// * Hyperparameter arithmetic (`1 - lr * weight_decay`, `1 - beta1 ** step`, `lr / bc1`,
//   `math.sqrt(bc2)`, `1 - dampening`) is Python float arithmetic, i.e. double; the result
//   becomes a float32 when it meets a float32 tensor (a Scalar converted to the tensor dtype).
// * Tensor arithmetic is float32, one rounding per op, except where torch's AVX2 CPU kernels
//   (the ones every x86-64 machine with AVX2 runs) fuse: `a.add_(b, alpha=s)` is fma(s, b, a)
//   and `a.addcmul_(b, c, value=s)` is fma(s * b, c, a). `addcdiv_(b, c, value=s)` is
//   a + (s * b) / c with three roundings. These were checked element by element against
//   Debian's torch 1.13 (tests/unit/kernels/optimizer_reference.py).
// This file is compiled with -ffp-contract=off (runtime/kernels/CMakeLists.txt): the compiler
// must not fuse anything beyond the explicit std::fma calls, whatever -march a build uses.
//
// Hyperparameters arrive as double attributes (the compiler keeps the Python-float values) and
// lr as an f32 tensor; each is used in double where torch computes in double and rounded to f32
// where torch converts the Python scalar for a tensor op.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/optimizer_checks.h"
#include "runtime/kernels/cpu/vector_dispatch.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>

namespace shardc::runtime::cpu {

namespace {

// The step value (dtype and shape checked by checkAdamw / checkSgd): 1-based, already
// incremented, as torch's state['step'] after `step_t += 1`. Steps start at 1: step 0 would
// make AdamW's bias correction 0.
Status readStep(const char *kernel, const Tensor &t, int64_t *step) {
  *step = t.as<int64_t>()[0];
  if (*step < 1)
    return Status::error(std::string(kernel) + ": step must be >= 1, got " +
                         std::to_string(*step));
  return Status::ok();
}

// The optional skip flag (input `index`; dynamic loss scaling's found-inf): true when it is
// present and nonzero.
bool readSkip(const KernelArgs &args, size_t index) {
  return hasSkip(args, index) && args.inputs[index].as<float>()[0] != 0.0f;
}

// A skipped step: every output keeps its input's value (nothing to do where it is updated in
// place). `pairs` are (input index, output index).
void keepInputs(KernelArgs &args, std::initializer_list<std::pair<int, int>> pairs) {
  for (auto [in, out] : pairs) {
    const Tensor &from = args.inputs[in];
    const Tensor &to = args.outputs[out];
    if (to.data != from.data)
      std::memcpy(to.data, from.data, static_cast<size_t>(from.numel()) * sizeof(float));
  }
}

} // namespace

Status adamwUpdateKernel(KernelArgs &args) {
  const char *kernel = "adamw_update";
  AdamwAttrs attrs;
  SHARDC_RETURN_IF_ERROR(checkAdamw(args, &attrs));
  const Tensor &param = args.inputs[0], &grad = args.inputs[1], &expAvg = args.inputs[2],
               &expAvgSq = args.inputs[3];
  int64_t step = 0;
  SHARDC_RETURN_IF_ERROR(readStep(kernel, args.inputs[4], &step));
  const float lrF = args.inputs[5].as<float>()[0];
  const double beta1 = attrs.beta1, beta2 = attrs.beta2, eps = attrs.eps;
  const double weightDecay = attrs.weightDecay;
  // Python scalars meeting a float32 tensor become float32.
  const float beta1F = static_cast<float>(beta1), beta2F = static_cast<float>(beta2);
  const float epsF = static_cast<float>(eps);

  // The Python-side scalars of _single_tensor_adamw, in double as there.
  const double lr = lrF;
  const double stepD = static_cast<double>(step); // step_t.item() is a Python float
  const double biasCorrection1 = 1.0 - std::pow(beta1, stepD);
  const double biasCorrection2 = 1.0 - std::pow(beta2, stepD);
  const double stepSize = lr / biasCorrection1;
  const double biasCorrection2Sqrt = std::sqrt(biasCorrection2);
  // Each becomes f32 where it meets a tensor.
  const float decay = static_cast<float>(1.0 - lr * weightDecay);
  const float oneMinusBeta1 = static_cast<float>(1.0 - beta1);
  const float oneMinusBeta2 = static_cast<float>(1.0 - beta2);
  const float bc2SqrtF = static_cast<float>(biasCorrection2Sqrt);
  const float negStepSize = static_cast<float>(-stepSize);

  if (readSkip(args, 6)) {
    keepInputs(args, {{0, 0}, {2, 1}, {3, 2}});
    return Status::ok();
  }
  const float *p = param.as<float>(), *g = grad.as<float>(), *m = expAvg.as<float>(),
              *v = expAvgSq.as<float>();
  float *pOut = args.outputs[0].as<float>(), *mOut = args.outputs[1].as<float>(),
        *vOut = args.outputs[2].as<float>();
  const int64_t n = param.numel();
  // Element i reads and writes element i only (an output may be its input itself): the
  // elements split over the threads and vectorise (std::fma is one instruction from AVX2 on).
  parallelFor(n, kElementsPerThread, [&](int64_t first, int64_t last) {
    vectorLoop(first, last, [&](int64_t i) {
      const float gi = g[i];
      const float decayed = p[i] * decay;                               // param.mul_(1 - lr*wd)
      const float mi = std::fma(oneMinusBeta1, gi, m[i] * beta1F);      // mul_(b1).add_(g, alpha)
      const float vi = std::fma(oneMinusBeta2 * gi, gi, v[i] * beta2F); // mul_(b2).addcmul_(g, g)
      const float denom = std::sqrt(vi) / bc2SqrtF + epsF;              // (sqrt / bc2_sqrt).add_(eps)
      pOut[i] = decayed + (negStepSize * mi) / denom;                   // addcdiv_(m, denom, -step_size)
      mOut[i] = mi;
      vOut[i] = vi;
    });
  });
  return Status::ok();
}

Status sgdUpdateKernel(KernelArgs &args) {
  const char *kernel = "sgd_update";
  SgdAttrs attrs;
  SHARDC_RETURN_IF_ERROR(checkSgd(args, &attrs));
  const Tensor &param = args.inputs[0], &grad = args.inputs[1], &buffer = args.inputs[2];
  int64_t step = 0;
  SHARDC_RETURN_IF_ERROR(readStep(kernel, args.inputs[3], &step));
  const float lrF = args.inputs[4].as<float>()[0];
  const double momentum = attrs.momentum, dampening = attrs.dampening;
  const double weightDecay = attrs.weightDecay;
  const int64_t nesterov = attrs.nesterov;
  const float momentumF = static_cast<float>(momentum);
  const float weightDecayF = static_cast<float>(weightDecay);

  // torch tests these as Python floats (`if weight_decay != 0`, `if momentum != 0`), so a zero
  // skips the term entirely (no 0 * inf = NaN).
  const bool decay = weightDecay != 0.0, useMomentum = momentum != 0.0;
  const bool firstStep = step == 1; // torch: the buffer does not exist yet, buf = clone(d_p)
  const float bufferScale = static_cast<float>(1.0 - dampening);
  const float negLr = -lrF; // alpha=-lr: exact in f32

  if (readSkip(args, 5)) {
    keepInputs(args, {{0, 0}, {2, 1}});
    return Status::ok();
  }
  const float *p = param.as<float>(), *g = grad.as<float>(), *b = buffer.as<float>();
  float *pOut = args.outputs[0].as<float>(), *bOut = args.outputs[1].as<float>();
  const int64_t n = param.numel();
  parallelFor(n, kElementsPerThread, [&](int64_t first, int64_t last) {
    vectorLoop(first, last, [&](int64_t i) {
      float dp = g[i];
      if (decay)
        dp = std::fma(weightDecayF, p[i], dp); // d_p.add(param, alpha=weight_decay)
      if (useMomentum) {
        // buf.mul_(momentum).add_(d_p, alpha=1 - dampening), or clone(d_p) on first use.
        const float buf = firstStep ? dp : std::fma(bufferScale, dp, b[i] * momentumF);
        bOut[i] = buf;
        dp = nesterov ? std::fma(momentumF, buf, dp) : buf; // d_p.add(buf, alpha=momentum)
      } else {
        bOut[i] = b[i]; // no momentum: torch keeps no buffer; pass it through unchanged
      }
      pOut[i] = std::fma(negLr, dp, p[i]); // param.add_(d_p, alpha=-lr)
    });
  });
  return Status::ok();
}

} // namespace shardc::runtime::cpu
