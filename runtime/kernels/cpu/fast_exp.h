// A float exp that compilers vectorise at the baseline x86-64 ISA (SSE2, no -march), for the
// kernels where exp dominates (softmax, sigmoid, gelu's tanh form). std::exp is a libm call
// per element and never vectorises. Accuracy is within 2 ulp of the exact result over the
// normal range; results that would be subnormal (x < -87.33) are flushed to 0.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

namespace shardc::runtime::cpu {

inline float fastExp(float x) {
  // exp(x) = 2^n * exp(r) with n = round(x / ln 2) and |r| <= ln(2)/2; exp(r) by the Cephes
  // minimax polynomial, ln 2 split in two parts so that r is computed without cancellation.
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kMaxX = 88.3762626647949f;  // exp overflows to +inf above this
  constexpr float kMinX = -87.3365447505531f; // ln(FLT_MIN): below, the result is flushed to 0
  // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a libm call (the
  // compiler may not fold it away: no -ffast-math).
  constexpr float kRoundMagic = 12582912.0f;

  // Written so that NaN lands on kMinX (both comparisons are false): converting NaN to int
  // below would be undefined. The NaN itself is restored at the end.
  const float clamped = x > kMinX ? (x < kMaxX ? x : kMaxX) : kMinX;
  const float n = (clamped * kLog2e + kRoundMagic) - kRoundMagic;
  const float r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n built directly in the exponent field; n is in [-126, 128] after clamping, and the
  // n = 128 case (x near kMaxX) is split in two multiplications to avoid an infinite scale.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni / 2;
  const int32_t bitsA = (half + 127) << 23, bitsB = (ni - half + 127) << 23;
  float scaleA, scaleB;
  std::memcpy(&scaleA, &bitsA, sizeof scaleA);
  std::memcpy(&scaleB, &bitsB, sizeof scaleB);
  float result = p * scaleA * scaleB;
  result = x > kMaxX ? std::numeric_limits<float>::infinity() : result;
  result = x < kMinX ? 0.0f : result;
  return x != x ? x : result; // NaN stays NaN
}

} // namespace shardc::runtime::cpu
