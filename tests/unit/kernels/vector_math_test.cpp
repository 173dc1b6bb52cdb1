// The vectorisable double exp (runtime/kernels/cpu/vector_math.h) against libm's over the
// range the kernels use it in.
#include "runtime/kernels/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>

namespace shardc::runtime::cpu {
namespace {

TEST(VectorMath, ExpDoubleMatchesLibmClosely) {
  for (double x = -700; x <= 700; x += 0.37) {
    const double ours = vectorExpDouble(x), libm = std::exp(x);
    EXPECT_LE(std::fabs(ours - libm), 1e-14 * libm) << x;
  }
  EXPECT_EQ(vectorExpDouble(0.0), 1.0);
  // Rounded to float, as the cross-entropy gradient uses it, it is libm's exp.
  int differ = 0;
  for (double x = -100; x <= 0; x += 1e-4)
    differ += static_cast<float>(vectorExpDouble(x)) != static_cast<float>(std::exp(x));
  EXPECT_LE(differ, 10); // of a million
}

} // namespace
} // namespace shardc::runtime::cpu
