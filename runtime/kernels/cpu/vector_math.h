// exp of doubles as loops can vectorise it: a polynomial in double (no libm call, no table
// lookup, no branch), for the kernels that take exp in double per element (the cross-entropy
// gradient, whose libm exp ran at 4 ns per element). Its relative error is below 1e-14, so a
// result rounded to float afterwards is libm's but for the rare values within 1e-14 of a
// rounding midpoint. Only +, -, *, / and conversions are used, never a fused multiply-add, so
// the scalar loop and every vector width give the same bits (the kernels are built with
// -ffp-contract=off).
//
// The float functions (exp, tanh, erf) stay libm's (elementwise_functions.h). Written the same
// way they are correctly rounded but for rare last-bit cases and run 3 to 9 times faster, but
// they differ from libm's in the last bit of a few results in a hundred (tanh, erf) or a
// hundred thousand (exp), and trainings that amplify such differences (GPT-2 in the pipeline
// zoo, the BERT encoder's microbatches) then part from their reference runs by more than their
// tests' tolerances, which were set with libm's rounding.
#pragma once

#include <cstdint>
#include <cstring>

namespace shardc::runtime::cpu {

namespace vector_math_detail {

// Horner's rule for c[I] + c[I+1] x + ... + c[N-1] x^(N-1-I), written out at compile time: a
// loop here would be a loop nest, which the vectorisers do not take.
template <int N, int I = 0>
[[gnu::always_inline]] inline double polynomial(const double (&c)[N], double x) {
  if constexpr (I == N - 1)
    return c[I];
  else
    return polynomial<N, I + 1>(c, x) * x + c[I];
}

// e^x for x in [-700, 700]: x = n ln2 + r with n = round(x / ln2), |r| <= ln2/2, e^r by its
// Taylor series to r^11 (remainder below 7e-15 relative), 2^n written into the exponent.
[[gnu::always_inline]] inline double expDouble(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  // ln 2 in two parts (Cody and Waite; fdlibm's constants): the high part's last 21 bits are
  // zero, so n * kLn2Hi and x minus it are exact, and r keeps its bits even where |x| is large.
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  // Adding 1.5 * 2^52 rounds to an integer, which then sits in the low bits of the sum.
  constexpr double kShift = 6755399441055744.0;
  constexpr double kTaylor[12] = {1.0,
                                  1.0,
                                  1.0 / 2,
                                  1.0 / 6,
                                  1.0 / 24,
                                  1.0 / 120,
                                  1.0 / 720,
                                  1.0 / 5040,
                                  1.0 / 40320,
                                  1.0 / 362880,
                                  1.0 / 3628800,
                                  1.0 / 39916800};
  const double shifted = x * kLog2e + kShift;
  const double n = shifted - kShift;
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  int64_t shiftedBits, shiftBits;
  std::memcpy(&shiftedBits, &shifted, sizeof shiftedBits);
  std::memcpy(&shiftBits, &kShift, sizeof shiftBits);
  const uint64_t scaleBits = static_cast<uint64_t>(shiftedBits - shiftBits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &scaleBits, sizeof scale);
  return polynomial(kTaylor, r) * scale;
}

} // namespace vector_math_detail

// e^x in double (relative error below 1e-14) for x in [-700, 700]; the caller clamps.
[[gnu::always_inline]] inline double vectorExpDouble(double x) {
  return vector_math_detail::expDouble(x);
}

} // namespace shardc::runtime::cpu
