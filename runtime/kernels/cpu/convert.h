// Conversions between element types with the results defined for every input, shared by `cast`
// and `pow`. C++ leaves float -> int conversion of NaN or out-of-range values undefined; we pin
// it to what x86 (and so NumPy and ONNX Runtime there) produces: the most negative value.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace shardc::runtime::cpu {

// Converts a floating value to integer type `Int`, truncating toward zero.
template <typename Int, typename Float> inline Int floatToInt(Float v) {
  static_assert(std::is_integral_v<Int> && std::is_floating_point_v<Float>);
  // 2^(digits) is exactly representable; every value strictly inside (-2^d - 1, 2^d) truncates
  // into range.
  const Float limit = std::ldexp(Float(1), std::numeric_limits<Int>::digits);
  if (!(v > -limit - Float(1) && v < limit))
    return std::numeric_limits<Int>::min();
  return static_cast<Int>(v);
}

// Converts between element types with `cast` semantics: float -> int truncates toward zero,
// anything -> bool (uint8_t) is `!= 0`, integer narrowing wraps (two's complement).
template <typename To, typename From> inline To convertElement(From v) {
  if constexpr (std::is_same_v<To, uint8_t>) {
    return v != From(0) ? 1 : 0;
  } else if constexpr (std::is_same_v<From, uint8_t>) {
    return v != 0 ? To(1) : To(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return floatToInt<To>(v);
  } else if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
    // Through the unsigned type so that narrowing is the two's-complement wrap.
    return static_cast<To>(static_cast<std::make_unsigned_t<To>>(v));
  } else {
    return static_cast<To>(v);
  }
}

} // namespace shardc::runtime::cpu
