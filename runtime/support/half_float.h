// The two 16-bit float element types: bfloat16 (BF16) and IEEE binary16 (F16), stored as their
// bits, and their conversions to and from f32. Narrowing rounds to nearest, ties to even, as
// PyTorch's (c10::BFloat16, c10::Half) and the hardware conversions do; a NaN stays a (quiet)
// NaN and keeps its sign; out-of-range values become infinities; widening is exact.
#pragma once

#include <cstdint>
#include <cstring>

namespace shardc::runtime {

struct BFloat16 {
  uint16_t bits = 0;
};

struct Float16 {
  uint16_t bits = 0;
};

inline uint32_t floatBits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

inline float floatFromBits(uint32_t u) {
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

inline float toFloat(BFloat16 v) { return floatFromBits(static_cast<uint32_t>(v.bits) << 16); }

inline BFloat16 toBFloat16(float v) {
  const uint32_t u = floatBits(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep the sign and the top payload bits, quiet
    return BFloat16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  // Adding 0x7fff rounds the dropped half up past the midpoint; the kept lowest bit breaks a tie
  // toward even. A carry into the exponent is the correct rounding (up to infinity included).
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>(rounded >> 16)};
}

inline float toFloat(Float16 v) {
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x8000u) << 16;
  const uint32_t exponent = (v.bits >> 10) & 0x1fu, mantissa = v.bits & 0x3ffu;
  if (exponent == 0x1f) // infinity or NaN
    return floatFromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) // normal: rebias 15 -> 127
    return floatFromBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in f32.
  const float magnitude = static_cast<float>(mantissa) * floatFromBits(0x33800000u); // 2^-24
  return sign ? -magnitude : magnitude;
}

inline Float16 toFloat16(float v) {
  const uint32_t u = floatBits(v);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN: quiet, with the top payload bits
    return Float16{static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  if (magnitude >= 0x477ff000u) // at or past the midpoint between 65504 and 65536: infinity
    return Float16{static_cast<uint16_t>(sign | 0x7c00u)};
  if (magnitude < 0x38800000u) { // below 2^-14: a subnormal (or zero) result
    // Scaled by 2^24 the result's units are whole numbers; the f32 addition of 0.5 * 2^23
    // (a float whose ulp is 1 there) rounds the value to the nearest integer, ties to even.
    const float scaled = floatFromBits(magnitude) * 16777216.0f; // exact: a power of two
    const float shifted = scaled + 8388608.0f;                  // 2^23: ulp 1
    return Float16{static_cast<uint16_t>(sign | (floatBits(shifted) - 0x4b000000u))};
  }
  // Normal: rebias 127 -> 15 and round the 13 dropped mantissa bits to nearest, ties to even
  // (a carry into the exponent is the correct rounding, up to infinity).
  const uint32_t rebiased = magnitude - (112u << 23);
  const uint32_t rounded = rebiased + 0xfffu + ((rebiased >> 13) & 1u);
  return Float16{static_cast<uint16_t>(sign | (rounded >> 13))};
}

} // namespace shardc::runtime
