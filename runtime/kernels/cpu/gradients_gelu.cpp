// gelu_grad: dx = dy * gelu'(x), for both forms of the forward `gelu` kernel.
//   "none": gelu(x) = 0.5 x (1 + erf(x / sqrt 2))
//           gelu'(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
//   "tanh": gelu(x) = x s, s = sigmoid(2u) = 0.5 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3)
//           gelu'(x) = s + x * 2 s (1 - s) * sqrt(2/pi) (1 + 3 * 0.044715 x^2)
// The tanh form is differentiated through the sigmoid the forward evaluates, which is the same
// function as the tanh expression.
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/grad_checks.h"
#include "runtime/kernels/cpu/kernel_threads.h"

#include <cmath>
#include <string>

namespace shardc::runtime::cpu {

namespace {

float geluErfDerivative(float v) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
  const float cdf = 0.5f * (1.0f + std::erf(v * kInvSqrt2));
  // For |x| beyond ~14 the density term is below every float; skipping it also keeps
  // x = +-inf from producing inf * 0 = NaN (the limits of gelu' there are 1 and 0).
  if (!(std::fabs(v) < 40.0f))
    return v != v ? v : cdf;
  return cdf + v * std::exp(-0.5f * v * v) * kInvSqrt2Pi;
}

float geluTanhDerivative(float v) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  constexpr float kCubic = 0.044715f;
  // Outside this range s is exactly 0 or 1 in float and the second term vanishes; returning
  // the limit avoids inf * 0 for huge |x| (x^3 overflows near 7e12).
  if (!(std::fabs(v) < 40.0f))
    return v != v ? v : (v > 0 ? 1.0f : 0.0f);
  const float u2 = 2.0f * kSqrt2OverPi * (v + kCubic * v * v * v);
  const float s = 1.0f / (1.0f + std::exp(-u2));
  return s + v * 2.0f * s * (1.0f - s) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
}

template <typename Derivative>
void apply(const Tensor &dy, const Tensor &x, const Tensor &dx, Derivative derivative) {
  const float *pdy = dy.as<float>(), *px = x.as<float>();
  float *pdx = dx.as<float>();
  parallelFor(x.numel(), kElementsPerThread, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
      pdx[i] = pdy[i] * derivative(px[i]);
  });
}

} // namespace

Status geluGradKernel(KernelArgs &args) {
  std::string approximate;
  SHARDC_RETURN_IF_ERROR(checkGeluGrad(args, &approximate));
  const Tensor &dy = args.inputs[0], &x = args.inputs[1], &dx = args.outputs[0];
  if (approximate == "none") {
    apply(dy, x, dx, geluErfDerivative);
    return Status::ok();
  }
  if (approximate == "tanh") {
    apply(dy, x, dx, geluTanhDerivative);
    return Status::ok();
  }
  return geluGradApproximateError(approximate);
}

} // namespace shardc::runtime::cpu
