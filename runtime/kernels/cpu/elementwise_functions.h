// The f32 function of every elementwise kernel that `fused_elementwise` can run as a step
// (docs/kernels.md), written once: the f32 paths of the unary and binary kernels (unary.cpp,
// binary.cpp) and each step of the fused kernel (fused_elementwise.cpp) call these, so a fused
// chain computes bit for bit what the chain of kernels computes. Plain inline functions that
// the compiler inlines into each kernel's loop (and vectorises where the function allows).
#pragma once

#include "runtime/kernels/cpu/fast_exp.h"
#include "runtime/support/half_float.h"

#include <cmath>

namespace shardc::runtime::cpu {

// ---- unary ----------------------------------------------------------------------------------

inline float negF32(float v) { return -v; }
inline float absF32(float v) { return std::fabs(v); }
// Written so that NaN propagates (the comparison is false).
inline float reluF32(float v) { return v < 0.0f ? 0.0f : v; }
inline float sqrtF32(float v) { return std::sqrt(v); }
inline float reciprocalF32(float v) { return 1.0f / v; }
inline float expF32(float v) { return std::exp(v); }
inline float logF32(float v) { return std::log(v); }
inline float tanhF32(float v) { return std::tanh(v); }
inline float erfF32(float v) { return std::erf(v); }
inline float sinF32(float v) { return std::sin(v); }
inline float cosF32(float v) { return std::cos(v); }

// exp of -|x| never overflows: sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) below,
// with e = exp(-|x|). Branch-free so that the loop vectorises.
inline float sigmoidF32(float v) {
  const float e = fastExp(-std::fabs(v));
  const float inv = 1.0f / (1.0f + e);
  return v >= 0.0f ? inv : e * inv;
}

// max(x, 0) + log1p(exp(-|x|)) is log(1 + exp(x)) where exp(x) would overflow (x > 88), and
// keeps the tail where x is very negative; NaN propagates through exp.
inline float softplusF32(float v) { return std::fmax(v, 0.0f) + std::log1p(std::exp(-std::fabs(v))); }

// The f32 value of the bf16 (f16) that `cast` rounds v to (nearest, ties to even).
inline float roundBf16F32(float v) { return toFloat(toBFloat16(v)); }
inline float roundF16F32(float v) { return toFloat(toFloat16(v)); }

// ---- binary ---------------------------------------------------------------------------------

inline float addF32(float a, float b) { return a + b; }
inline float subF32(float a, float b) { return a - b; }
inline float mulF32(float a, float b) { return a * b; }
inline float divF32(float a, float b) { return a / b; }

// pow in double, rounded once to f32.
inline float powF32(float a, float b) {
  return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
}

// powF32(a, 2) without the libm call: a float has a 24-bit significand, so its square is exact
// in double and equal to what pow(a, 2.0) returns.
inline float squareF32(float a) {
  const double d = static_cast<double>(a);
  return static_cast<float>(d * d);
}

// NaN in either operand propagates: if `a` is NaN it is returned, if `b` is, `a > b` is false.
inline float maxF32(float a, float b) { return (a > b || a != a) ? a : b; }
inline float minF32(float a, float b) { return (a < b || a != a) ? a : b; }

} // namespace shardc::runtime::cpu
