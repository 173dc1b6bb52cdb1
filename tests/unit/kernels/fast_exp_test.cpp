// The vectorisable exp used inside softmax, sigmoid and gelu, against double-precision exp.
#include "runtime/kernels/cpu/fast_exp.h"
#include "tests/unit/kernels/test_support.h"

#include <limits>

namespace shardc::runtime::testing {
namespace {

using cpu::fastExp;

TEST(FastExp, RelativeErrorOverTheNormalRange) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.3f; x += 0.0137f) {
    const double exact = std::exp(double(x));
    const double rel = std::fabs(double(fastExp(x)) - exact) / exact;
    worst = std::max(worst, rel);
  }
  // 2 ulp of float is 2.4e-7 relative.
  EXPECT_LT(worst, 2.4e-7);
}

TEST(FastExp, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fastExp(0.0f), 1.0f);
  EXPECT_EQ(fastExp(-inf), 0.0f);
  EXPECT_EQ(fastExp(inf), inf);
  EXPECT_TRUE(std::isnan(fastExp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(fastExp(89.0f), inf);
  EXPECT_EQ(fastExp(-88.0f), 0.0f); // would be subnormal: flushed
  EXPECT_NEAR(fastExp(88.3f) / std::exp(double(88.3f)), 1.0,
              3e-7); // near the top: 2^128 scale split
  EXPECT_NEAR(fastExp(-87.3f) / std::exp(double(-87.3f)), 1.0, 3e-7);
  EXPECT_NEAR(fastExp(1.0f), 2.7182817f, 3e-7);
}

} // namespace
} // namespace shardc::runtime::testing
