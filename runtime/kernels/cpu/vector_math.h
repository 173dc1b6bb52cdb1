// erf of floats and exp of doubles as loops can vectorise them: computed in double by
// polynomials (no libm call, no table lookup, no branch), erf rounded once to float.
//
// libm's erff and exp are calls per element that no loop vectorises; in a training step they
// ran the erf GELU at 5 ns per element and the cross-entropy gradient's exp at 4. In double,
// erf's polynomial error (below 2e-14 relative) is far under half a float ulp (6e-8), so the
// rounded result is the correctly rounded float except for the rare arguments whose exact
// value lies within 1e-12 of a midpoint between two floats: none is off by more than 1 ulp
// (tests/unit/kernels/vector_math_test.cpp sweeps every 251st float). Only +, -, *, / and
// conversions are used, never a fused multiply-add, so the scalar loop and every vector width
// give the same bits (the kernels are built with -ffp-contract=off).
//
// exp and tanh of floats stay libm's (elementwise_functions.h): computed this way they are
// correctly rounded too, but they differ from libm's in the last bit of a few results in a
// thousand (tanh) or a hundred thousand (exp), and GPT-2's training, which turns such
// differences into visibly different losses, then parts from its pipeline-parallel runs by
// more than its test's tolerance (test_pipeline_zoo.py).
#pragma once

#include <cstdint>
#include <cstring>

namespace shardc::runtime::cpu {

namespace vector_math_detail {

// Horner's rule for c[I] + c[I+1] x + ... + c[N-1] x^(N-1-I), written out at compile time: a
// loop here would be a loop nest, which the vectorisers do not take.
template <int N, int I = 0> [[gnu::always_inline]] inline double polynomial(const double (&c)[N], double x) {
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

// erf(x) / x as a polynomial in u = x^2 on [0, 1] (Chebyshev fit, max relative error 2e-14).
constexpr double kErfSmall[10] = {
    1.128379167095494,     -0.3761263890281549,    0.11283791658727335,  -0.026866169068772615,
    0.005223967286670863,  -0.0008547936423747,    0.00012046306876005868, -1.4795482817061418e-05,
    1.530878366199233e-06, -1.0474474855701275e-07};

// erf(x) on [1, 4] as a polynomial in s = (2x - 5) / 3 in [-1, 1] (Chebyshev fit, max absolute
// error 1.2e-11, where the results are at least 0.84).
constexpr double kErfLarge[19] = {
    0.999593047975718,     0.003267426299731306,    -0.012252847422972193, 0.0281815546431302,
    -0.04365081934641308,  0.046453578116389484,    -0.031875966120700656, 0.00926778260627533,
    0.00667685721004782,   -0.009622182128763085,   0.004558520875261866,  0.00044344740149745716,
    -0.0018600137897439824, 0.0009188635419126772,  0.0001003065637946897, -0.00029381093919185957,
    7.670249893218666e-05, 3.293628012601345e-05,   -1.5399684256035428e-05};

[[gnu::always_inline]] inline float copySign(float magnitude, float sign) {
  uint32_t m, s;
  std::memcpy(&m, &magnitude, sizeof m);
  std::memcpy(&s, &sign, sizeof s);
  const uint32_t bits = (m & 0x7fffffffu) | (s & 0x80000000u);
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

} // namespace vector_math_detail

// e^x in double (relative error below 1e-14) for x in [-700, 700]; the caller clamps.
[[gnu::always_inline]] inline double vectorExpDouble(double x) {
  return vector_math_detail::expDouble(x);
}

// erf(v): |v| < 1 by erf(x) = x P(x^2), [1, 4) by a polynomial in x, beyond 4 the float
// result is 1 (erfc(4) = 1.5e-8 is below half an ulp of 1); the sign of v.
[[gnu::always_inline]] inline float vectorErf(float v) {
  using namespace vector_math_detail;
  const double a = static_cast<double>(v < 0.0f ? -v : v);
  const double small = a * polynomial(kErfSmall, a * a);
  // Evaluated for every a (the selection below discards it outside [1, 4)).
  const double large = polynomial(kErfLarge, (2.0 * a - 5.0) / 3.0);
  const double e = a < 1.0 ? small : (a < 4.0 ? large : 1.0);
  return v != v ? v : copySign(static_cast<float>(e), v);
}

} // namespace shardc::runtime::cpu
