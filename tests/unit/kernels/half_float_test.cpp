// The 16-bit float conversions (runtime/support/half_float.h) against their definitions:
// widening against the formats' value formulas, narrowing against "the representable value
// nearest in exact (double) arithmetic, ties to the even bit pattern, infinity past the largest
// finite value's half ulp", on every edge case and on a million random floats of every
// magnitude. And the cast kernel, which converts through them.
#include "runtime/support/half_float.h"
#include "tests/unit/kernels/test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace shardc::runtime::cpu {
namespace {

// The value of a bit pattern with `mantissaBits` and `exponentBits` (IEEE layout), exactly.
double ieeeValue(uint32_t bits, int exponentBits, int mantissaBits) {
  const uint32_t mantissa = bits & ((1u << mantissaBits) - 1);
  const uint32_t exponent = (bits >> mantissaBits) & ((1u << exponentBits) - 1);
  const bool negative = (bits >> (mantissaBits + exponentBits)) & 1u;
  const int bias = (1 << (exponentBits - 1)) - 1;
  double magnitude;
  if (exponent == (1u << exponentBits) - 1)
    magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN()
                         : std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissaBits);
  else
    magnitude = std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -mantissaBits),
                           static_cast<int>(exponent) - bias);
  return negative ? -magnitude : magnitude;
}

double bf16Value(uint16_t bits) { return ieeeValue(bits, 8, 7); }
double f16Value(uint16_t bits) { return ieeeValue(bits, 5, 10); }

// The 16-bit pattern nearest to finite `v` among the finite patterns of the format (ties: the
// even pattern), or infinity when |v| reaches the largest finite value plus half its ulp.
uint16_t nearestPattern(float v, double (*value)(uint16_t), uint16_t maxFinite) {
  const double x = v;
  const double largest = value(maxFinite), below = value(static_cast<uint16_t>(maxFinite - 1));
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const uint16_t infinity = static_cast<uint16_t>(maxFinite + 1);
  if (std::fabs(x) >= largest + (largest - below) / 2)
    return static_cast<uint16_t>(sign | infinity);
  // Binary search over the positive finite patterns (ordered like their values).
  uint16_t lo = 0, hi = maxFinite;
  const double a = std::fabs(x);
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    (value(mid) <= a ? lo : hi) = mid;
  }
  const double dLo = a - value(lo), dHi = value(hi) - a;
  uint16_t pick = dLo < dHi ? lo : dHi < dLo ? hi : ((lo & 1) == 0 ? lo : hi);
  if (value(hi) == a)
    pick = hi;
  return static_cast<uint16_t>(sign | pick);
}

std::vector<float> edgeCases() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 65536.0f,
                          std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(), 6.1035156e-05f,
                          5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, 8.9406967e-08f,
                          3.3895314e38f, 3.3961775e38f};
  // Exact midpoints between neighbouring bf16 values (ties), both parities, and 1 ulp away.
  for (uint32_t base : {0x3f800000u, 0x3f810000u, 0x40490000u, 0x00010000u, 0x7f7e0000u})
    for (uint32_t offset : {0x7fffu, 0x8000u, 0x8001u})
      v.push_back(floatFromBits(base + offset));
  // The same for f16 (13 dropped bits) and its subnormal range.
  for (uint32_t base : {0x3f800000u, 0x3f802000u, 0x33800000u, 0x38800000u, 0x477fc000u})
    for (uint32_t offset : {0xfffu, 0x1000u, 0x1001u})
      v.push_back(floatFromBits(base + offset));
  return v;
}

std::vector<float> randomFloats(size_t count) {
  std::mt19937 rng(12345);
  std::vector<float> v;
  v.reserve(count);
  while (v.size() < count) {
    const float f = floatFromBits(static_cast<uint32_t>(rng()));
    if (std::isfinite(f))
      v.push_back(f);
  }
  // Also a million values in f16's range, where its rounding and subnormals matter.
  std::uniform_real_distribution<float> mantissa(0.5f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (size_t i = 0; i < count; ++i)
    v.push_back(std::ldexp(mantissa(rng), exponent(rng)) * (i % 2 ? -1.0f : 1.0f));
  return v;
}

TEST(HalfFloat, WideningIsExactForEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    const double bf = bf16Value(b), hf = f16Value(b);
    if (std::isnan(bf))
      EXPECT_TRUE(std::isnan(toFloat(BFloat16{b}))) << bits;
    else
      ASSERT_EQ(static_cast<double>(toFloat(BFloat16{b})), bf) << bits;
    if (std::isnan(hf))
      EXPECT_TRUE(std::isnan(toFloat(Float16{b}))) << bits;
    else
      ASSERT_EQ(static_cast<double>(toFloat(Float16{b})), hf) << bits;
    // And back: every non-NaN pattern survives the round trip.
    if (!std::isnan(bf))
      ASSERT_EQ(toBFloat16(toFloat(BFloat16{b})).bits, b) << bits;
    if (!std::isnan(hf))
      ASSERT_EQ(toFloat16(toFloat(Float16{b})).bits, b) << bits;
  }
}

TEST(HalfFloat, NarrowingRoundsToNearestEven) {
  std::vector<float> values = edgeCases();
  for (float f : randomFloats(1000000))
    values.push_back(f);
  for (float v : values) {
    ASSERT_EQ(toBFloat16(v).bits, nearestPattern(v, bf16Value, 0x7f7f))
        << "bf16 of " << v << " (0x" << std::hex << floatBits(v) << ")";
    ASSERT_EQ(toFloat16(v).bits, nearestPattern(v, f16Value, 0x7bff))
        << "f16 of " << v << " (0x" << std::hex << floatBits(v) << ")";
  }
}

TEST(HalfFloat, InfinitiesAndNaNs) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(toBFloat16(inf).bits, 0x7f80);
  EXPECT_EQ(toBFloat16(-inf).bits, 0xff80);
  EXPECT_EQ(toFloat16(inf).bits, 0x7c00);
  EXPECT_EQ(toFloat16(-inf).bits, 0xfc00);
  // A NaN stays a NaN, even one whose payload sits only in the dropped bits.
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u}) {
    EXPECT_TRUE(std::isnan(toFloat(toBFloat16(floatFromBits(nan))))) << std::hex << nan;
    EXPECT_TRUE(std::isnan(toFloat(toFloat16(floatFromBits(nan))))) << std::hex << nan;
    EXPECT_EQ(std::signbit(toFloat(toBFloat16(floatFromBits(nan)))), (nan >> 31) == 1);
  }
}

// The cast kernel moves f32 to the 16-bit floats and back through these conversions, and other
// types through f32.
TEST(HalfFloat, CastKernel) {
  const std::vector<float> in = {1.0f, 1.00390625f, 1.01171875f, -3.14159f, 70000.0f, 1e-8f};
  testing::HostTensor x = testing::HostTensor::of<float>({6}, in);
  for (DType half : {program::BF16, program::F16}) {
    testing::HostTensor h(half, {6}), back(program::F32, {6});
    ASSERT_KERNEL_OK(testing::runKernel("cast", {x}, {h}, testing::Attrs().i("to", half)));
    ASSERT_KERNEL_OK(
        testing::runKernel("cast", {h}, {back}, testing::Attrs().i("to", program::F32)));
    const uint16_t *bits = h.view().as<uint16_t>();
    std::vector<float> out = back.values<float>();
    for (size_t i = 0; i < in.size(); ++i) {
      const float expected = half == program::BF16 ? toFloat(toBFloat16(in[i]))
                                                   : toFloat(toFloat16(in[i]));
      EXPECT_EQ(out[i], expected) << dtypeName(half) << " " << in[i];
      EXPECT_EQ(bits[i], half == program::BF16 ? toBFloat16(in[i]).bits
                                               : toFloat16(in[i]).bits);
    }
  }
  // 1 + 2^-8 is a bf16 tie: to even, 1.0; 1 + 3 * 2^-8 ties up to 1 + 2^-6.
  testing::HostTensor ties = testing::HostTensor::of<float>({2}, {1.00390625f, 1.01171875f});
  testing::HostTensor b(program::BF16, {2});
  ASSERT_KERNEL_OK(testing::runKernel("cast", {ties}, {b}, testing::Attrs().i("to", program::BF16)));
  EXPECT_EQ(b.view().as<uint16_t>()[0], 0x3f80);
  EXPECT_EQ(b.view().as<uint16_t>()[1], 0x3f82);
  // i64 -> bf16 goes through the nearest f32 (2^24 + 1 -> 2^24).
  testing::HostTensor i = testing::HostTensor::of<int64_t>({1}, {16777217});
  testing::HostTensor one(program::BF16, {1});
  ASSERT_KERNEL_OK(
      testing::runKernel("cast", {i}, {one}, testing::Attrs().i("to", program::BF16)));
  EXPECT_EQ(one.view().as<uint16_t>()[0], 0x4b80);
}

// Kernels that move elements by their size take the 16-bit floats as any 2-byte dtype.
TEST(HalfFloat, MovedByTheDataMovementKernels) {
  testing::HostTensor x(program::BF16, {2, 3});
  uint16_t *in = x.view().as<uint16_t>();
  for (uint16_t i = 0; i < 6; ++i)
    in[i] = static_cast<uint16_t>(0x3f80 + i);
  testing::HostTensor t(program::BF16, {3, 2});
  ASSERT_KERNEL_OK(
      testing::runKernel("transpose", {x}, {t}, testing::Attrs().ints("perm", {1, 0})));
  const uint16_t *out = t.view().as<uint16_t>();
  EXPECT_EQ(std::vector<uint16_t>(out, out + 6),
            (std::vector<uint16_t>{0x3f80, 0x3f83, 0x3f81, 0x3f84, 0x3f82, 0x3f85}));
  testing::HostTensor both(program::BF16, {4, 3});
  ASSERT_KERNEL_OK(
      testing::runKernel("concat", {x, x}, {both}, testing::Attrs().i("axis", 0)));
  const uint16_t *joined = both.view().as<uint16_t>();
  EXPECT_EQ(joined[6], 0x3f80);
  EXPECT_EQ(joined[11], 0x3f85);
}

} // namespace
} // namespace shardc::runtime::cpu
