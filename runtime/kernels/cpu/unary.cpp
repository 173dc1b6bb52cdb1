// Elementwise kernels with one input: y has x's shape, and (except `not`) x's dtype.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/elementwise_checks.h"
#include "runtime/kernels/cpu/elementwise_functions.h"
#include "runtime/kernels/cpu/fast_exp.h"
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/vector_dispatch.h"

#include <cmath>
#include <type_traits>

namespace shardc::runtime::cpu {

namespace {

// Split over the kernel threads and vectorised at the CPU's widest level (element i reads
// element i only; y may be x itself).
template <typename T, typename Op> void mapElements(const Tensor &x, const Tensor &y, Op op) {
  const T *in = x.as<T>();
  T *out = y.as<T>();
  parallelFor(x.numel(), kElementsPerThread, [&](int64_t first, int64_t last) {
    vectorLoop(first, last, [&](int64_t i) { SHARDC_INLINE_BODY out[i] = op(in[i]); });
  });
}

// A kernel defined on f32 only.
template <typename Op> Status floatUnary(const char *kernel, KernelArgs &args, Op op) {
  SHARDC_RETURN_IF_ERROR(checkFloatUnary(kernel, args));
  mapElements<float>(args.inputs[0], args.outputs[0], op);
  return Status::ok();
}

// A kernel defined on f32, i64 and i32; `op` is a generic lambda.
template <typename Op> Status numericUnary(const char *kernel, KernelArgs &args, Op op) {
  SHARDC_RETURN_IF_ERROR(checkNumericUnary(kernel, args));
  const Tensor &x = args.inputs[0];
  return visitNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    mapElements<T>(x, args.outputs[0], [&](T v) { return op(v); });
    return Status::ok();
  });
}

// Integer negation wraps (the most negative value maps to itself), like NumPy, instead of
// being undefined behaviour.
template <typename T> T wrappingNeg(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(v));
  else
    return -v;
}

} // namespace

// The f32 paths call the functions of elementwise_functions.h, which fused_elementwise's steps
// call too.
Status negKernel(KernelArgs &args) {
  return numericUnary("neg", args, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float>)
      return negF32(v);
    else
      return wrappingNeg(v);
  });
}

Status absKernel(KernelArgs &args) {
  return numericUnary("abs", args, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float>)
      return absF32(v);
    else
      return v < 0 ? wrappingNeg(v) : v;
  });
}

Status reluKernel(KernelArgs &args) {
  return numericUnary("relu", args, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float>)
      return reluF32(v);
    else
      return v < T(0) ? T(0) : v;
  });
}

Status sqrtKernel(KernelArgs &args) {
  return floatUnary("sqrt", args, [](float v) { return sqrtF32(v); });
}

Status reciprocalKernel(KernelArgs &args) {
  return floatUnary("reciprocal", args, [](float v) { return reciprocalF32(v); });
}

Status expKernel(KernelArgs &args) {
  return floatUnary("exp", args, [](float v) { return expF32(v); });
}

Status logKernel(KernelArgs &args) {
  return floatUnary("log", args, [](float v) { return logF32(v); });
}

Status tanhKernel(KernelArgs &args) {
  return floatUnary("tanh", args, [](float v) { return tanhF32(v); });
}

Status erfKernel(KernelArgs &args) {
  return floatUnary("erf", args, [](float v) { return erfF32(v); });
}

Status sinKernel(KernelArgs &args) {
  return floatUnary("sin", args, [](float v) { return sinF32(v); });
}

Status cosKernel(KernelArgs &args) {
  return floatUnary("cos", args, [](float v) { return cosF32(v); });
}

Status softplusKernel(KernelArgs &args) {
  // max(x, 0) + log1p(exp(-|x|)): no overflow (elementwise_functions.h).
  return floatUnary("softplus", args, [](float v) { return softplusF32(v); });
}

Status sigmoidKernel(KernelArgs &args) {
  // Through exp(-|x|), which never overflows, branch-free (elementwise_functions.h).
  return floatUnary("sigmoid", args, [](float v) { return sigmoidF32(v); });
}

Status geluKernel(KernelArgs &args) {
  std::string approximate;
  SHARDC_RETURN_IF_ERROR(getStringAttr(args, "approximate", &approximate));
  if (approximate == "none") {
    return floatUnary("gelu", args, [](float v) {
      constexpr float kInvSqrt2 = 0.70710678118654752440f;
      return 0.5f * v * (1.0f + std::erf(v * kInvSqrt2));
    });
  }
  if (approximate == "tanh") {
    // 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)), u = sqrt(2/pi) * (x + 0.044715 x^3): the same
    // function without a tanh call, so the loop vectorises. exp(-2u) overflowing to +inf for
    // very negative x gives x / inf = -0, the limit.
    return floatUnary("gelu", args, [](float v) {
      constexpr float kTwoSqrt2OverPi = 2.0f * 0.79788456080286535588f;
      const float u2 = kTwoSqrt2OverPi * (v + 0.044715f * v * v * v);
      return v / (1.0f + fastExp(-u2));
    });
  }
  return Status::error("gelu: attribute 'approximate' must be \"none\" or \"tanh\", got \"" +
                       approximate + "\"");
}

Status notKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkUnary("not", args));
  SHARDC_RETURN_IF_ERROR(expectDtype("not", "x", args.inputs[0], program::BOOL));
  mapElements<uint8_t>(args.inputs[0], args.outputs[0],
                       [](uint8_t v) { return static_cast<uint8_t>(v == 0); });
  return Status::ok();
}

} // namespace shardc::runtime::cpu
