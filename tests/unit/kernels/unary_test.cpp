// Elementwise kernels with one input, against naive loops.
#include "tests/unit/kernels/test_support.h"

#include <limits>

namespace shardc::runtime::testing {
namespace {

const std::vector<std::vector<int64_t>> kShapes = {{}, {0}, {7}, {3, 5}, {2, 3, 4}};

// Runs `kernel` on random data of each shape and compares with `reference` applied per element.
template <typename T, typename Ref>
void checkUnary(const std::string &kernel, int lo, int hi, Ref reference, double relTol = 0.0,
                const Attrs &attrs = Attrs()) {
  unsigned seed = 1;
  for (const auto &shape : kShapes) {
    SCOPED_TRACE(kernel + " shape rank " + std::to_string(shape.size()));
    const std::vector<T> in = randomValues<T>(numelOf(shape), lo, hi, seed++);
    HostTensor x = HostTensor::of<T>(shape, in);
    HostTensor y(dtypeOf<T>(), shape);
    ASSERT_KERNEL_OK(runKernel(kernel, {x}, {y}, attrs));
    std::vector<T> expected;
    for (T v : in)
      expected.push_back(static_cast<T>(reference(v)));
    expectValuesNear(y.values<T>(), expected, relTol);
  }
}

template <typename T> void checkNumericUnaries() {
  checkUnary<T>("neg", -50, 50, [](T v) { return -v; });
  checkUnary<T>("abs", -50, 50, [](T v) { return v < 0 ? -v : v; });
  checkUnary<T>("relu", -50, 50, [](T v) { return v > 0 ? v : T(0); });
}

TEST(Unary, NumericKernelsF32) { checkNumericUnaries<float>(); }
TEST(Unary, NumericKernelsI64) { checkNumericUnaries<int64_t>(); }
TEST(Unary, NumericKernelsI32) { checkNumericUnaries<int32_t>(); }

TEST(Unary, IntegerNegationWraps) {
  const int32_t minI32 = std::numeric_limits<int32_t>::min();
  HostTensor x = HostTensor::of<int32_t>({3}, {minI32, -1, 5});
  HostTensor y(program::I32, {3});
  ASSERT_KERNEL_OK(runKernel("neg", {x}, {y}));
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{minI32, 1, -5}));
  ASSERT_KERNEL_OK(runKernel("abs", {x}, {y}));
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{minI32, 1, 5}));
}

TEST(Unary, FloatFunctions) {
  // References in double, rounded once, so they do not share code with the kernels.
  const double tol = 2e-7;
  checkUnary<float>(
      "sqrt", 0, 100, [](float v) { return std::sqrt(double(v)); }, tol);
  checkUnary<float>(
      "reciprocal", 1, 100, [](float v) { return 1.0 / double(v); }, tol);
  checkUnary<float>(
      "exp", -20, 20, [](float v) { return std::exp(double(v)); }, tol);
  checkUnary<float>(
      "log", 0, 1000, [](float v) { return std::log(double(v)); }, tol);
  checkUnary<float>(
      "tanh", -5, 5, [](float v) { return std::tanh(double(v)); }, tol);
  checkUnary<float>(
      "erf", -4, 4, [](float v) { return std::erf(double(v)); }, tol);
  checkUnary<float>(
      "sin", -10, 10, [](float v) { return std::sin(double(v)); }, tol);
  checkUnary<float>(
      "cos", -10, 10, [](float v) { return std::cos(double(v)); }, tol);
  checkUnary<float>(
      "sigmoid", -30, 30, [](float v) { return 1.0 / (1.0 + std::exp(-double(v))); }, tol);
  checkUnary<float>(
      "softplus", -40, 40, [](float v) { return std::log1p(std::exp(double(v))); }, tol);
}

TEST(Unary, FloatSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = HostTensor::of<float>({5}, {-1.0f, 0.0f, inf, -inf, nan});
  HostTensor y(program::F32, {5});
  ASSERT_KERNEL_OK(runKernel("sqrt", {x}, {y}));
  expectValuesNear(y.values<float>(), {nan, 0.0f, inf, nan, nan});
  ASSERT_KERNEL_OK(runKernel("log", {x}, {y}));
  expectValuesNear(y.values<float>(), {nan, -inf, inf, nan, nan});
  ASSERT_KERNEL_OK(runKernel("reciprocal", {x}, {y}));
  expectValuesNear(y.values<float>(), {-1.0f, inf, 0.0f, -0.0f, nan});
  // Large magnitudes must saturate, not overflow into NaN.
  ASSERT_KERNEL_OK(runKernel("sigmoid", {x}, {y}));
  expectValuesNear(y.values<float>(), {0.26894142f, 0.5f, 1.0f, 0.0f, nan}, 1e-7);
  ASSERT_KERNEL_OK(runKernel("relu", {x}, {y}));
  expectValuesNear(y.values<float>(), {0.0f, 0.0f, inf, 0.0f, nan});
  // softplus(x) = x where exp(x) overflows f32 (x > 88), and tends to exp(x) far below 0.
  ASSERT_KERNEL_OK(runKernel("softplus", {x}, {y}));
  expectValuesNear(y.values<float>(), {0.31326169f, 0.69314718f, inf, 0.0f, nan}, 1e-7);
  HostTensor big = HostTensor::of<float>({3}, {100.0f, -100.0f, 1000.0f});
  HostTensor bigY(program::F32, {3});
  ASSERT_KERNEL_OK(runKernel("softplus", {big}, {bigY}));
  expectValuesNear(bigY.values<float>(), {100.0f, 3.7200760e-44f, 1000.0f}, 1e-6);
}

TEST(Unary, Gelu) {
  // Hand values: gelu(1) = 0.5 * (1 + erf(1/sqrt 2)) = 0.8413447; tanh form 0.8411920.
  HostTensor one = HostTensor::of<float>({1}, {1.0f});
  HostTensor y1(program::F32, {1});
  ASSERT_KERNEL_OK(runKernel("gelu", {one}, {y1}, Attrs().s("approximate", "none")));
  EXPECT_NEAR(y1.values<float>()[0], 0.8413447f, 1e-6);
  ASSERT_KERNEL_OK(runKernel("gelu", {one}, {y1}, Attrs().s("approximate", "tanh")));
  EXPECT_NEAR(y1.values<float>()[0], 0.8411920f, 1e-6);

  checkUnary<float>(
      "gelu", -6, 6, [](float v) { return 0.5 * v * (1.0 + std::erf(double(v) / std::sqrt(2.0))); },
      1e-6, Attrs().s("approximate", "none"));
  checkUnary<float>(
      "gelu", -6, 6,
      [](float v) {
        const double x = v;
        return 0.5 * x *
               (1.0 + std::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (x + 0.044715 * x * x * x)));
      },
      1e-6, Attrs().s("approximate", "tanh"));
}

TEST(Unary, Not) {
  HostTensor x = HostTensor::of<uint8_t>({2, 2}, {0, 1, 1, 0});
  HostTensor y(program::BOOL, {2, 2});
  ASSERT_KERNEL_OK(runKernel("not", {x}, {y}));
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{1, 0, 0, 1}));
}

TEST(Unary, InconsistentOperandsAreErrors) {
  HostTensor xf = HostTensor::of<float>({2}, {1, 2});
  HostTensor xi = HostTensor::of<int32_t>({2}, {1, 2});
  HostTensor xb = HostTensor::of<uint8_t>({2}, {1, 0});
  HostTensor yf(program::F32, {2}), yi(program::I32, {2}), yb(program::BOOL, {2});
  HostTensor yWrongShape(program::F32, {3});
  EXPECT_KERNEL_ERROR(runKernel("neg", {xi}, {yf}), "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("neg", {xf}, {yWrongShape}), "expected [2]");
  EXPECT_KERNEL_ERROR(runKernel("neg", {xb}, {yb}), "expected f32, i64 or i32");
  EXPECT_KERNEL_ERROR(runKernel("sqrt", {xi}, {yi}), "expected f32");
  EXPECT_KERNEL_ERROR(runKernel("not", {xf}, {yf}), "expected bool");
  EXPECT_KERNEL_ERROR(runKernel("exp", {xf, xf}, {yf}), "expected 1 inputs, got 2");
  EXPECT_KERNEL_ERROR(runKernel("exp", {xf}, {}), "expected 1 outputs, got 0");
  EXPECT_KERNEL_ERROR(runKernel("exp", {absent()}, {yf}), "input 0 is required but absent");
  EXPECT_KERNEL_ERROR(runKernel("gelu", {xf}, {yf}), "missing attribute 'approximate'");
  EXPECT_KERNEL_ERROR(runKernel("gelu", {xf}, {yf}, Attrs().s("approximate", "fast")),
                      "must be \"none\" or \"tanh\"");
  EXPECT_KERNEL_ERROR(runKernel("gelu", {xf}, {yf}, Attrs().i("approximate", 0)),
                      "attribute 'approximate' is not a string");
}

} // namespace
} // namespace shardc::runtime::testing
