// Elementwise kernels with two broadcast inputs, against naive loops over the output index.
#include "tests/unit/kernels/test_support.h"

#include <limits>

namespace shardc::runtime::testing {
namespace {

struct ShapeCase {
  std::vector<int64_t> a, b, y;
};

// Same shape, trailing-dim broadcast, both sides broadcast, scalar operands, rank mismatch,
// an empty output.
const std::vector<ShapeCase> kShapeCases = {
    {{2, 3}, {2, 3}, {2, 3}},
    {{2, 3}, {3}, {2, 3}},
    {{3}, {2, 3}, {2, 3}},
    {{4, 1}, {1, 5}, {4, 5}},
    {{}, {2, 2}, {2, 2}},
    {{2, 2}, {}, {2, 2}},
    {{}, {}, {}},
    {{2, 1, 3}, {4, 1}, {2, 4, 3}},
    {{3, 1, 2, 1}, {1, 4, 1, 5}, {3, 4, 2, 5}},
    {{1}, {}, {1}},
    {{0, 3}, {3}, {0, 3}},
    {{2, 1}, {2, 17}, {2, 17}},
};

// Runs `kernel` for each shape case on random operands of types A and B (values in [lo, hi];
// `fixB` may adjust b's values, e.g. to avoid zero divisors) and compares every output element
// with `reference(a[src], b[src])`.
template <typename A, typename B, typename Out, typename Ref, typename FixB>
void checkBinary(const std::string &kernel, int lo, int hi, Ref reference, FixB fixB,
                 double relTol = 0.0, const Attrs &attrs = Attrs()) {
  unsigned seed = 11;
  for (const ShapeCase &c : kShapeCases) {
    SCOPED_TRACE(kernel + " a" + std::to_string(c.a.size()) + " b" + std::to_string(c.b.size()) +
                 " case " + std::to_string(seed));
    std::vector<A> va = randomValues<A>(numelOf(c.a), lo, hi, seed++);
    std::vector<B> vb = randomValues<B>(numelOf(c.b), lo, hi, seed++);
    for (B &v : vb)
      v = fixB(v);
    HostTensor a = HostTensor::of<A>(c.a, va);
    HostTensor b = HostTensor::of<B>(c.b, vb);
    HostTensor y(dtypeOf<Out>(), c.y);
    ASSERT_KERNEL_OK(runKernel(kernel, {a, b}, {y}, attrs));
    std::vector<Out> expected(static_cast<size_t>(numelOf(c.y)));
    for (int64_t i = 0; i < numelOf(c.y); ++i) {
      const std::vector<int64_t> index = unravel(i, c.y);
      expected[i] = static_cast<Out>(
          reference(va[broadcastSource(index, c.a)], vb[broadcastSource(index, c.b)]));
    }
    expectValuesNear(y.values<Out>(), expected, relTol);
  }
}

template <typename A, typename B, typename Out, typename Ref>
void checkBinary(const std::string &kernel, int lo, int hi, Ref reference) {
  checkBinary<A, B, Out>(kernel, lo, hi, reference, [](B v) { return v; });
}

template <typename T> void checkArithmetic() {
  checkBinary<T, T, T>("add", -100, 100, [](T a, T b) { return a + b; });
  checkBinary<T, T, T>("sub", -100, 100, [](T a, T b) { return a - b; });
  checkBinary<T, T, T>("mul", -100, 100, [](T a, T b) { return a * b; });
  checkBinary<T, T, T>("max", -100, 100, [](T a, T b) { return a > b ? a : b; });
  checkBinary<T, T, T>("min", -100, 100, [](T a, T b) { return a < b ? a : b; });
  // Divisors avoid zero; integer references truncate the exact quotient toward zero.
  checkBinary<T, T, T>(
      "div", -100, 100,
      [](T a, T b) {
        if constexpr (std::is_integral_v<T>)
          return static_cast<T>(std::trunc(double(a) / double(b)));
        else
          return a / b;
      },
      [](T v) { return v == T(0) ? T(3) : v; }, 1e-7);
  // mod: C's fmod (the dividend's sign) for every type, Python's % (the divisor's) for
  // integers; references from the exact quotient in double.
  const auto nonZero = [](T v) { return v == T(0) ? T(3) : v; };
  checkBinary<T, T, T>(
      "mod", -100, 100,
      [](T a, T b) {
        if constexpr (std::is_integral_v<T>)
          return static_cast<T>(double(a) - std::trunc(double(a) / double(b)) * double(b));
        else
          return static_cast<T>(std::fmod(double(a), double(b)));
      },
      nonZero, 0.0, Attrs().i("fmod", 1));
  if constexpr (std::is_integral_v<T>)
    checkBinary<T, T, T>(
        "mod", -100, 100,
        [](T a, T b) {
          return static_cast<T>(double(a) - std::floor(double(a) / double(b)) * double(b));
        },
        nonZero, 0.0, Attrs().i("fmod", 0));
  checkBinary<T, T, uint8_t>("equal", -3, 3, [](T a, T b) { return a == b; });
  checkBinary<T, T, uint8_t>("less", -3, 3, [](T a, T b) { return a < b; });
  checkBinary<T, T, uint8_t>("greater", -3, 3, [](T a, T b) { return a > b; });
}

TEST(Binary, ArithmeticAndComparisonsF32) { checkArithmetic<float>(); }
TEST(Binary, ArithmeticAndComparisonsI64) { checkArithmetic<int64_t>(); }
TEST(Binary, ArithmeticAndComparisonsI32) { checkArithmetic<int32_t>(); }

TEST(Binary, EqualAndLogicOnBool) {
  auto bit = [](uint8_t v) { return static_cast<uint8_t>(v & 1); };
  checkBinary<uint8_t, uint8_t, uint8_t>(
      "equal", 0, 1, [](uint8_t a, uint8_t b) { return a == b; }, bit);
  checkBinary<uint8_t, uint8_t, uint8_t>(
      "and", 0, 1, [](uint8_t a, uint8_t b) { return a && b; }, bit);
  checkBinary<uint8_t, uint8_t, uint8_t>(
      "or", 0, 1, [](uint8_t a, uint8_t b) { return a || b; }, bit);
}

TEST(Binary, PowAcrossDtypes) {
  // Reference: pow in double, converted to a's dtype.
  auto ref = [](auto a, auto b) { return std::pow(double(a), double(b)); };
  checkBinary<float, float, float>(
      "pow", -3, 3, ref, [](float v) { return std::round(v); }, 1e-7);
  checkBinary<float, int64_t, float>(
      "pow", -3, 3, ref, [](int64_t v) { return v; }, 1e-7);
  checkBinary<float, int32_t, float>(
      "pow", -3, 3, ref, [](int32_t v) { return v; }, 1e-7);
  checkBinary<int64_t, int64_t, int64_t>("pow", 0, 5, ref);
  checkBinary<int32_t, int64_t, int32_t>("pow", 0, 5, ref);
  checkBinary<int64_t, float, int64_t>("pow", 0, 4, ref);
  // Negative exponents of integers truncate: 2^-1 = 0.5 -> 0, (-1)^-1 = -1.
  HostTensor a = HostTensor::of<int64_t>({3}, {2, -1, 1});
  HostTensor b = HostTensor::of<int64_t>({}, {-1});
  HostTensor y(program::I64, {3});
  ASSERT_KERNEL_OK(runKernel("pow", {a, b}, {y}));
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{0, -1, 1}));
}

TEST(Binary, PowSquareMatchesDoublePow) {
  const std::vector<float> va = randomFloats(64, -1e4f, 1e4f, 5);
  HostTensor a = HostTensor::of<float>({8, 8}, va);
  for (DType bType : {program::F32, program::I64}) {
    HostTensor b =
        bType == program::F32 ? HostTensor::scalar<float>(2.0f) : HostTensor::scalar<int64_t>(2);
    HostTensor y(program::F32, {8, 8});
    ASSERT_KERNEL_OK(runKernel("pow", {a, b}, {y}));
    std::vector<float> expected;
    for (float v : va)
      expected.push_back(static_cast<float>(std::pow(double(v), 2.0)));
    expectValuesNear(y.values<float>(), expected);
  }
}

TEST(Binary, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor a = HostTensor::of<float>({3}, {nan, 1.0f, 2.0f});
  HostTensor b = HostTensor::of<float>({3}, {0.0f, nan, 1.0f});
  HostTensor y(program::F32, {3});
  ASSERT_KERNEL_OK(runKernel("max", {a, b}, {y}));
  expectValuesNear(y.values<float>(), {nan, nan, 2.0f});
  ASSERT_KERNEL_OK(runKernel("min", {a, b}, {y}));
  expectValuesNear(y.values<float>(), {nan, nan, 1.0f});
}

TEST(Binary, IntegerEdgeCases) {
  const int32_t maxI32 = std::numeric_limits<int32_t>::max();
  const int32_t minI32 = std::numeric_limits<int32_t>::min();
  HostTensor a = HostTensor::of<int32_t>({4}, {maxI32, minI32, -7, 7});
  HostTensor b = HostTensor::of<int32_t>({4}, {1, -1, 2, -2});
  HostTensor y(program::I32, {4});
  ASSERT_KERNEL_OK(runKernel("add", {a, b}, {y}));
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{minI32, maxI32, -5, 5})); // wraps
  ASSERT_KERNEL_OK(runKernel("div", {a, b}, {y}));
  // Truncation toward zero; INT_MIN / -1 wraps to INT_MIN instead of trapping.
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{maxI32, minI32, -3, -3}));

  HostTensor zero = HostTensor::of<int32_t>({4}, {1, 0, 1, 1});
  EXPECT_KERNEL_ERROR(runKernel("div", {a, zero}, {y}), "integer division by zero");
  // Float division by zero is IEEE.
  HostTensor fa = HostTensor::of<float>({2}, {1.0f, -1.0f});
  HostTensor fz = HostTensor::of<float>({}, {0.0f});
  HostTensor fy(program::F32, {2});
  ASSERT_KERNEL_OK(runKernel("div", {fa, fz}, {fy}));
  expectValuesNear(fy.values<float>(), {std::numeric_limits<float>::infinity(),
                                        -std::numeric_limits<float>::infinity()});
}

TEST(Binary, ModSignsAndErrors) {
  const int32_t minI32 = std::numeric_limits<int32_t>::min();
  HostTensor a = HostTensor::of<int32_t>({6}, {7, -7, 7, -7, 0, minI32});
  HostTensor b = HostTensor::of<int32_t>({6}, {3, 3, -3, -3, 5, -1});
  HostTensor y(program::I32, {6});
  ASSERT_KERNEL_OK(runKernel("mod", {a, b}, {y}, Attrs().i("fmod", 0)));
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{1, 2, -2, -1, 0, 0})); // Python's %
  ASSERT_KERNEL_OK(runKernel("mod", {a, b}, {y}, Attrs().i("fmod", 1)));
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{1, -1, 1, -1, 0, 0})); // C's fmod
  HostTensor zero = HostTensor::of<int32_t>({6}, {1, 1, 0, 1, 1, 1});
  EXPECT_KERNEL_ERROR(runKernel("mod", {a, zero}, {y}, Attrs().i("fmod", 1)),
                      "integer division by zero");
  HostTensor fa = HostTensor::of<float>({3}, {5.5f, -5.5f, 5.5f});
  HostTensor fb = HostTensor::of<float>({3}, {2.0f, 2.0f, -2.0f});
  HostTensor fy(program::F32, {3});
  ASSERT_KERNEL_OK(runKernel("mod", {fa, fb}, {fy}, Attrs().i("fmod", 1)));
  expectValuesNear(fy.values<float>(), {1.5f, -1.5f, 1.5f});
  EXPECT_KERNEL_ERROR(runKernel("mod", {fa, fb}, {fy}, Attrs().i("fmod", 0)),
                      "f32 operands need fmod = 1");
  EXPECT_KERNEL_ERROR(runKernel("mod", {fa, fb}, {fy}, Attrs().i("fmod", 2)),
                      "'fmod' must be 0 or 1");
}

TEST(Binary, InconsistentOperandsAreErrors) {
  HostTensor f23(program::F32, {2, 3}), f3(program::F32, {3}), f4(program::F32, {4});
  HostTensor i3(program::I32, {3}), b3(program::BOOL, {3}), b23(program::BOOL, {2, 3});
  HostTensor y23(program::F32, {2, 3}), y3(program::F32, {3}), y223(program::F32, {2, 2, 3});
  EXPECT_KERNEL_ERROR(runKernel("add", {f23, f4}, {y23}), "do not broadcast");
  // Each input broadcasts to y, but y is larger than their broadcast.
  EXPECT_KERNEL_ERROR(runKernel("add", {f23, f3}, {y223}), "expected the broadcast shape [2x3]");
  EXPECT_KERNEL_ERROR(runKernel("mul", {f3, f3}, {y23}), "expected the broadcast shape [3]");
  EXPECT_KERNEL_ERROR(runKernel("sub", {f3, i3}, {y3}), "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("add", {b3, b3}, {b3}), "expected f32, i64 or i32");
  EXPECT_KERNEL_ERROR(runKernel("less", {f3, f3}, {y3}), "y is f32, expected bool");
  EXPECT_KERNEL_ERROR(runKernel("greater", {b3, b3}, {b3}), "expected f32, i64 or i32");
  EXPECT_KERNEL_ERROR(runKernel("and", {f3, b3}, {b3}), "a is f32, expected bool");
  EXPECT_KERNEL_ERROR(runKernel("or", {b23, b3}, {b3}), "expected the broadcast shape [2x3]");
  EXPECT_KERNEL_ERROR(runKernel("pow", {f3, b3}, {y3}), "b is bool");
  EXPECT_KERNEL_ERROR(runKernel("pow", {i3, f3}, {y3}), "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("max", {f3}, {y3}), "expected 2 inputs, got 1");
  EXPECT_KERNEL_ERROR(runKernel("div", {f3, absent()}, {y3}), "input 1 is required but absent");
}

} // namespace
} // namespace shardc::runtime::testing
