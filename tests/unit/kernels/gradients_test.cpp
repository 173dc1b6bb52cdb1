// The fused backward kernels (docs/kernels.md, "Gradients"). Each is checked three ways:
//  * against the forward kernel it differentiates, by central finite differences: for a random
//    cotangent c, the gradient of L(x) = sum(forward(x) * c) with respect to each input
//    element is (L(x + h e_k) - L(x - h e_k)) / (x_k+ - x_k-), L summed in double and the
//    denominator being the float inputs actually used, so the rounding of x +- h in f32 does
//    not bias the quotient;
//  * on small hand-computed cases with exact expected values;
//  * on malformed calls, which must fail with a message.
//
// Step and tolerance: h = 1e-3 on inputs of magnitude ~1. The forward runs in f32, so each L
// carries a rounding error of about sqrt(#outputs touched) * |y| * 6e-8; divided by 2h that
// is ~1e-4 for the tensors below, while the O(h^2) truncation error of central differences is
// ~1e-6 for these smooth functions. The comparison tolerance is therefore 1e-3, relative to
// max(1, |numeric gradient|). The losses are the exception: each loss value is a float of
// magnitude up to ~15 (a `sum`) or ~7 (one -log_prob), whose rounding (~1e-6) would use most of
// that budget at h = 1e-3, so they take h = 1e-2; log-softmax is smooth enough that the
// truncation error stays ~1e-5 there.
#include "tests/unit/kernels/test_support.h"

#include <functional>
#include <limits>
#include <numeric>

namespace shardc::runtime::testing {
namespace {

constexpr float kStep = 1e-3f;
constexpr float kLossStep = 1e-2f;
constexpr double kFdTolerance = 1e-3;

// The forward as a function of the one input being differentiated.
using Forward = std::function<std::vector<float>(const std::vector<float> &)>;

double contract(const std::vector<float> &y, const std::vector<float> &cotangent) {
  EXPECT_EQ(y.size(), cotangent.size());
  double sum = 0.0;
  for (size_t i = 0; i < y.size() && i < cotangent.size(); ++i)
    sum += static_cast<double>(y[i]) * cotangent[i];
  return sum;
}

// d sum(forward(x) * cotangent) / dx_k for every k, by central differences.
std::vector<double> numericGradient(const Forward &forward, const std::vector<float> &x,
                                    const std::vector<float> &cotangent, float step = kStep) {
  std::vector<double> grad(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    std::vector<float> plus = x, minus = x;
    plus[k] = x[k] + step;
    minus[k] = x[k] - step;
    const double width = static_cast<double>(plus[k]) - static_cast<double>(minus[k]);
    grad[k] = (contract(forward(plus), cotangent) - contract(forward(minus), cotangent)) / width;
  }
  return grad;
}

void expectMatchesNumeric(const std::vector<float> &analytic, const std::vector<double> &numeric,
                          const std::string &what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  for (size_t i = 0; i < analytic.size(); ++i)
    EXPECT_NEAR(analytic[i], numeric[i], kFdTolerance * std::max(1.0, std::fabs(numeric[i])))
        << what << " at " << i;
}

// ---- layer_norm_grad --------------------------------------------------------------------------

struct LayerNormCase {
  std::vector<int64_t> xShape;
  int64_t axis;
  std::vector<int64_t> scaleShape;
  std::vector<int64_t> biasShape;
};

const std::vector<LayerNormCase> kLayerNormCases = {
    {{2, 3, 4}, 2, {4}, {4}},       {{2, 3, 4}, 1, {3, 4}, {3, 4}},
    {{2, 3, 4}, 1, {1, 4}, {3, 1}}, // broadcast scale and bias, differently
    {{2, 3, 4}, 1, {4}, {1}},       {{3, 5}, 0, {5}, {3, 5}}, // the whole tensor is one row
    {{4, 1, 6}, 1, {1, 6}, {6}},
};

TEST(LayerNormGrad, MatchesFiniteDifferences) {
  unsigned seed = 100;
  for (const LayerNormCase &c : kLayerNormCases) {
    SCOPED_TRACE(::testing::Message() << "layer_norm_grad rank " << c.xShape.size() << " axis "
                                      << c.axis << " scale rank " << c.scaleShape.size());
    const auto x = randomFloats(numelOf(c.xShape), -2, 2, seed++);
    const auto scale = randomFloats(numelOf(c.scaleShape), 0.5f, 1.5f, seed++);
    const auto bias = randomFloats(numelOf(c.biasShape), -1, 1, seed++);
    const auto cot = randomFloats(numelOf(c.xShape), -1, 1, seed++);
    const Attrs fwdAttrs = Attrs().i("axis", c.axis).f("epsilon", 1e-5f);
    auto forward = [&](const std::vector<float> &xv, const std::vector<float> &sv,
                       const std::vector<float> &bv) {
      HostTensor y(program::F32, c.xShape);
      EXPECT_KERNEL_OK(runKernel("layer_norm",
                                 {HostTensor::of(c.xShape, xv), HostTensor::of(c.scaleShape, sv),
                                  HostTensor::of(c.biasShape, bv)},
                                 {y}, fwdAttrs));
      return y.values<float>();
    };
    std::vector<int64_t> statsShape = c.xShape;
    std::fill(statsShape.begin() + c.axis, statsShape.end(), 1);
    HostTensor y(program::F32, c.xShape), mean(program::F32, statsShape),
        invStd(program::F32, statsShape);
    HostTensor tx = HostTensor::of(c.xShape, x), tscale = HostTensor::of(c.scaleShape, scale);
    ASSERT_KERNEL_OK(runKernel("layer_norm", {tx, tscale, HostTensor::of(c.biasShape, bias)},
                               {y, mean, invStd}, fwdAttrs));

    HostTensor dx(program::F32, c.xShape), dscale(program::F32, c.scaleShape),
        dbias(program::F32, c.biasShape);
    ASSERT_KERNEL_OK(runKernel("layer_norm_grad",
                               {HostTensor::of(c.xShape, cot), tx, tscale, mean, invStd},
                               {dx, dscale, dbias}, Attrs().i("axis", c.axis)));
    expectMatchesNumeric(
        dx.values<float>(),
        numericGradient([&](const std::vector<float> &v) { return forward(v, scale, bias); }, x,
                        cot),
        "dx");
    expectMatchesNumeric(
        dscale.values<float>(),
        numericGradient([&](const std::vector<float> &v) { return forward(x, v, bias); }, scale,
                        cot),
        "dscale");
    expectMatchesNumeric(
        dbias.values<float>(),
        numericGradient([&](const std::vector<float> &v) { return forward(x, scale, v); }, bias,
                        cot),
        "dbias");
  }
}

// Two rows of three with the statistics given directly (the kernel trusts them), so every value
// can be worked out by hand from the formulas in the kernel's header comment.
TEST(LayerNormGrad, HandComputed) {
  HostTensor x = HostTensor::of<float>({2, 3}, {0, 1, 2, 0, 2, 4});
  HostTensor scale = HostTensor::of<float>({3}, {1, 2, 3});
  HostTensor dy = HostTensor::of<float>({2, 3}, {1, 1, 1, 1, 0, 0});
  HostTensor mean = HostTensor::of<float>({2, 1}, {1, 2});
  HostTensor invStd = HostTensor::of<float>({2, 1}, {1, 0.5f});
  HostTensor dx(program::F32, {2, 3}), dscale(program::F32, {3}), dbias(program::F32, {3});
  ASSERT_KERNEL_OK(runKernel("layer_norm_grad", {dy, x, scale, mean, invStd}, {dx, dscale, dbias},
                             Attrs().i("axis", 1)));
  // Row 0: xhat = [-1, 0, 1], g = [1, 2, 3], sum g = 6, sum g*xhat = 2:
  //   dx = 1/3 * (3g - 6 - 2 xhat) = [-1/3, 0, 1/3].
  // Row 1: xhat = [-1, 0, 1], g = [1, 0, 0], sum g = 1, sum g*xhat = -1:
  //   dx = 0.5/3 * (3g - 1 + xhat) = [1/6, -1/6, 0].
  expectValuesNear(dx.values<float>(), {-1.0f / 3, 0, 1.0f / 3, 1.0f / 6, -1.0f / 6, 0}, 1e-6);
  expectValuesNear(dscale.values<float>(), {-2, 0, 1}, 1e-6);
  expectValuesNear(dbias.values<float>(), {2, 1, 1}, 1e-6);

  // A broadcast [1] scale gets the sum over all normalised positions.
  HostTensor scalar = HostTensor::of<float>({1}, {2});
  HostTensor dscalar(program::F32, {1}), dbiasScalar(program::F32, {1});
  ASSERT_KERNEL_OK(runKernel("layer_norm_grad", {dy, x, scalar, mean, invStd},
                             {absent(), dscalar, dbiasScalar}, Attrs().i("axis", 1)));
  expectValuesNear(dscalar.values<float>(), {-1}, 1e-6);
  expectValuesNear(dbiasScalar.values<float>(), {4}, 1e-6);
}

TEST(LayerNormGrad, AnyOutputMayBeAbsent) {
  const std::vector<int64_t> shape = {3, 4};
  HostTensor x = HostTensor::of(shape, randomFloats(12, -2, 2, 7));
  HostTensor scale = HostTensor::of({4}, randomFloats(4, 0.5f, 1.5f, 8));
  HostTensor dy = HostTensor::of(shape, randomFloats(12, -1, 1, 9));
  HostTensor y(program::F32, shape), mean(program::F32, {3, 1}), invStd(program::F32, {3, 1});
  ASSERT_KERNEL_OK(runKernel("layer_norm", {x, scale}, {y, mean, invStd},
                             Attrs().i("axis", 1).f("epsilon", 1e-5f)));
  const Attrs attrs = Attrs().i("axis", 1);
  HostTensor dx(program::F32, shape), dscale(program::F32, {4}), dbias(program::F32, {4});
  ASSERT_KERNEL_OK(
      runKernel("layer_norm_grad", {dy, x, scale, mean, invStd}, {dx, dscale, dbias}, attrs));
  HostTensor dxOnly(program::F32, shape), dscaleOnly(program::F32, {4}),
      dbiasOnly(program::F32, {4});
  ASSERT_KERNEL_OK(runKernel("layer_norm_grad", {dy, x, scale, mean, invStd}, {dxOnly}, attrs));
  ASSERT_KERNEL_OK(runKernel("layer_norm_grad", {dy, x, scale, mean, invStd},
                             {absent(), dscaleOnly, absent()}, attrs));
  ASSERT_KERNEL_OK(runKernel("layer_norm_grad", {dy, x, scale, mean, invStd},
                             {absent(), absent(), dbiasOnly}, attrs));
  EXPECT_KERNEL_OK(runKernel("layer_norm_grad", {dy, x, scale, mean, invStd}, {}, attrs));
  EXPECT_EQ(dxOnly.values<float>(), dx.values<float>());
  EXPECT_EQ(dscaleOnly.values<float>(), dscale.values<float>());
  EXPECT_EQ(dbiasOnly.values<float>(), dbias.values<float>());
}

TEST(LayerNormGrad, Errors) {
  HostTensor x(program::F32, {2, 3}), dy(program::F32, {2, 3}), scale(program::F32, {3});
  HostTensor stats(program::F32, {2, 1}), dx(program::F32, {2, 3}), dscale(program::F32, {3});
  const Attrs attrs = Attrs().i("axis", 1);
  EXPECT_KERNEL_ERROR(runKernel("layer_norm_grad", {dy, x, scale, stats}, {dx}, attrs),
                      "expected 5 inputs");
  EXPECT_KERNEL_ERROR(runKernel("layer_norm_grad", {dy, x, scale, stats, stats}, {dx}),
                      "missing attribute 'axis'");
  EXPECT_KERNEL_ERROR(
      runKernel("layer_norm_grad", {dy, x, scale, stats, stats}, {dx}, Attrs().i("axis", 2)),
      "out of range");
  HostTensor dyWrong(program::F32, {3, 2});
  EXPECT_KERNEL_ERROR(runKernel("layer_norm_grad", {dyWrong, x, scale, stats, stats}, {dx}, attrs),
                      "dy has shape [3x2]");
  HostTensor statsWrong(program::F32, {2});
  EXPECT_KERNEL_ERROR(runKernel("layer_norm_grad", {dy, x, scale, statsWrong, stats}, {dx}, attrs),
                      "mean has shape [2]");
  HostTensor scaleWrong(program::F32, {2});
  EXPECT_KERNEL_ERROR(runKernel("layer_norm_grad", {dy, x, scaleWrong, stats, stats}, {dx}, attrs),
                      "scale");
  HostTensor dscaleWrong(program::F32, {1, 3});
  EXPECT_KERNEL_ERROR(
      runKernel("layer_norm_grad", {dy, x, scale, stats, stats}, {dx, dscaleWrong}, attrs),
      "dscale has shape [1x3]");
  HostTensor dbiasWrong(program::F32, {2});
  EXPECT_KERNEL_ERROR(
      runKernel("layer_norm_grad", {dy, x, scale, stats, stats}, {dx, dscale, dbiasWrong}, attrs),
      "dbias");
  HostTensor xInt(program::I32, {2, 3});
  EXPECT_KERNEL_ERROR(runKernel("layer_norm_grad", {dy, xInt, scale, stats, stats}, {dx}, attrs),
                      "x is i32");
}

// ---- softmax_grad, log_softmax_grad -----------------------------------------------------------

struct AxisCase {
  std::vector<int64_t> shape;
  int64_t axis;
};

const std::vector<AxisCase> kSoftmaxCases = {
    {{3, 5}, 1}, {{4, 3}, 0}, {{2, 4, 3}, 1}, {{2, 3, 4}, 2}, {{7}, 0},
};

void checkSoftmaxGrad(const char *forwardName, const char *gradName) {
  unsigned seed = 300;
  for (const AxisCase &c : kSoftmaxCases) {
    SCOPED_TRACE(::testing::Message() << gradName << " axis " << c.axis);
    const int64_t n = numelOf(c.shape);
    const auto x = randomFloats(n, -3, 3, seed++);
    const auto cot = randomFloats(n, -1, 1, seed++);
    const Attrs attrs = Attrs().i("axis", c.axis);
    auto forward = [&](const std::vector<float> &v) {
      HostTensor y(program::F32, c.shape);
      EXPECT_KERNEL_OK(runKernel(forwardName, {HostTensor::of(c.shape, v)}, {y}, attrs));
      return y.values<float>();
    };
    HostTensor y = HostTensor::of(c.shape, forward(x));
    HostTensor dx(program::F32, c.shape);
    ASSERT_KERNEL_OK(runKernel(gradName, {HostTensor::of(c.shape, cot), y}, {dx}, attrs));
    expectMatchesNumeric(dx.values<float>(), numericGradient(forward, x, cot), "dx");
  }
}

TEST(SoftmaxGrad, MatchesFiniteDifferences) { checkSoftmaxGrad("softmax", "softmax_grad"); }

TEST(LogSoftmaxGrad, MatchesFiniteDifferences) {
  checkSoftmaxGrad("log_softmax", "log_softmax_grad");
}

TEST(SoftmaxGrad, HandComputed) {
  // y = [0.25, 0.75], dy = [1, 0]: sum(dy * y) = 0.25, dx = y * (dy - 0.25).
  HostTensor dx(program::F32, {1, 2});
  ASSERT_KERNEL_OK(runKernel(
      "softmax_grad",
      {HostTensor::of<float>({1, 2}, {1, 0}), HostTensor::of<float>({1, 2}, {0.25f, 0.75f})}, {dx},
      Attrs().i("axis", 1)));
  expectValuesNear(dx.values<float>(), {0.1875f, -0.1875f}, 1e-7);
  // Along axis 0 of a [2, 2]: columns are independent.
  HostTensor dx2(program::F32, {2, 2});
  ASSERT_KERNEL_OK(runKernel("softmax_grad",
                             {HostTensor::of<float>({2, 2}, {1, 2, 0, 2}),
                              HostTensor::of<float>({2, 2}, {0.25f, 0.5f, 0.75f, 0.5f})},
                             {dx2}, Attrs().i("axis", 0)));
  expectValuesNear(dx2.values<float>(), {0.1875f, 0, -0.1875f, 0}, 1e-7);
}

TEST(LogSoftmaxGrad, HandComputed) {
  // exp(y) = [0.25, 0.75], sum(dy) = 3: dx = dy - 3 * exp(y).
  HostTensor dx(program::F32, {2});
  ASSERT_KERNEL_OK(runKernel("log_softmax_grad",
                             {HostTensor::of<float>({2}, {1, 2}),
                              HostTensor::of<float>({2}, {std::log(0.25f), std::log(0.75f)})},
                             {dx}, Attrs().i("axis", 0)));
  expectValuesNear(dx.values<float>(), {0.25f, -0.25f}, 1e-6);
}

TEST(SoftmaxGrad, Errors) {
  HostTensor dy(program::F32, {2, 3}), y(program::F32, {2, 3}), dx(program::F32, {2, 3});
  const Attrs attrs = Attrs().i("axis", 1);
  for (const char *name : {"softmax_grad", "log_softmax_grad"}) {
    EXPECT_KERNEL_ERROR(runKernel(name, {dy}, {dx}, attrs), "expected 2 inputs");
    EXPECT_KERNEL_ERROR(runKernel(name, {dy, y}, {dx}), "missing attribute 'axis'");
    EXPECT_KERNEL_ERROR(runKernel(name, {dy, y}, {dx}, Attrs().i("axis", 2)), "out of range");
    HostTensor yWrong(program::F32, {3, 2});
    EXPECT_KERNEL_ERROR(runKernel(name, {dy, yWrong}, {dx}, attrs), "y has shape [3x2]");
    HostTensor dxWrong(program::F32, {6});
    EXPECT_KERNEL_ERROR(runKernel(name, {dy, y}, {dxWrong}, attrs), "dx has shape [6]");
    HostTensor dyInt(program::I64, {2, 3});
    EXPECT_KERNEL_ERROR(runKernel(name, {dyInt, y}, {dx}, attrs), "dy is i64");
  }
}

// ---- gelu_grad --------------------------------------------------------------------------------

TEST(GeluGrad, MatchesFiniteDifferences) {
  std::vector<float> x = randomFloats(40, -5, 5, 400);
  x.push_back(0.0f);
  x.push_back(-0.5f);
  const std::vector<int64_t> shape = {6, 7};
  const auto cot = randomFloats(42, -1, 1, 401);
  for (const char *approximate : {"none", "tanh"}) {
    SCOPED_TRACE(approximate);
    const Attrs attrs = Attrs().s("approximate", approximate);
    auto forward = [&](const std::vector<float> &v) {
      HostTensor y(program::F32, shape);
      EXPECT_KERNEL_OK(runKernel("gelu", {HostTensor::of(shape, v)}, {y}, attrs));
      return y.values<float>();
    };
    HostTensor dx(program::F32, shape);
    ASSERT_KERNEL_OK(runKernel("gelu_grad", {HostTensor::of(shape, cot), HostTensor::of(shape, x)},
                               {dx}, attrs));
    expectMatchesNumeric(dx.values<float>(), numericGradient(forward, x, cot), "dx");
  }
}

TEST(GeluGrad, HandComputed) {
  const float inf = std::numeric_limits<float>::infinity();
  HostTensor x = HostTensor::of<float>({6}, {0, 1, 50, -50, inf, -inf});
  HostTensor dy = HostTensor::of<float>({6}, {2, 1, 1, 1, 1, 1});
  // gelu'(0) = 0.5 in both forms; erf form: gelu'(1) = Phi(1) + phi(1) = 0.8413447 + 0.2419707.
  // Far from 0 the derivative is 1 (right) and 0 (left), also at +-inf.
  HostTensor dx(program::F32, {6});
  ASSERT_KERNEL_OK(runKernel("gelu_grad", {dy, x}, {dx}, Attrs().s("approximate", "none")));
  expectValuesNear(dx.values<float>(), {1.0f, 1.0833155f, 1, 0, 1, 0}, 1e-6);
  // tanh form at 1: s = sigmoid(2u), u = sqrt(2/pi) * 1.044715, and
  // gelu'(1) = s + 2 s (1 - s) sqrt(2/pi) (1 + 0.134145), computed here in double.
  const double u = 0.79788456080286535588 * 1.044715;
  const double s = 1.0 / (1.0 + std::exp(-2.0 * u));
  const float tanhAt1 =
      static_cast<float>(s + 2.0 * s * (1.0 - s) * 0.79788456080286535588 * 1.134145);
  ASSERT_KERNEL_OK(runKernel("gelu_grad", {dy, x}, {dx}, Attrs().s("approximate", "tanh")));
  expectValuesNear(dx.values<float>(), {1.0f, tanhAt1, 1, 0, 1, 0}, 1e-6);
}

TEST(GeluGrad, Errors) {
  HostTensor dy(program::F32, {4}), x(program::F32, {4}), dx(program::F32, {4});
  EXPECT_KERNEL_ERROR(runKernel("gelu_grad", {dy, x}, {dx}), "missing attribute 'approximate'");
  EXPECT_KERNEL_ERROR(runKernel("gelu_grad", {dy, x}, {dx}, Attrs().s("approximate", "fast")),
                      "must be \"none\" or \"tanh\"");
  const Attrs attrs = Attrs().s("approximate", "none");
  HostTensor dyWrong(program::F32, {2, 2});
  EXPECT_KERNEL_ERROR(runKernel("gelu_grad", {dyWrong, x}, {dx}, attrs), "dy has shape [2x2]");
  HostTensor xInt(program::I32, {4});
  EXPECT_KERNEL_ERROR(runKernel("gelu_grad", {dy, xInt}, {dx}, attrs), "x is i32");
  EXPECT_KERNEL_ERROR(runKernel("gelu_grad", {dy}, {dx}, attrs), "expected 2 inputs");
}

// ---- softmax_cross_entropy_loss_grad, nll_loss_grad -------------------------------------------

struct LossGradCase {
  std::vector<int64_t> inputShape; // [N, C, d1..]
  std::vector<int64_t> targets;    // [N, d1..], flattened
  bool hasWeight;
  bool hasIgnoreIndex;
  int64_t ignoreIndex;
};

const std::vector<LossGradCase> kLossCases = {
    {{3, 4}, {0, 3, 1}, false, false, 0},
    {{3, 4}, {0, 3, 1}, true, false, 0},
    {{4, 5}, {1, 1, 4, 0}, true, true, 1},     // ignore_index inside the class range
    {{3, 4}, {2, -100, 2}, false, true, -100}, // repeated class, ignore_index outside the range
    {{2, 3, 2, 2}, {0, 1, 2, 2, 1, 1, 0, 2}, true, true, 2}, // [N, C, d1, d2]
    {{2, 3, 3}, {0, 1, 2, 2, 1, 0}, false, false, 0},
};

Attrs lossAttrs(const LossGradCase &c, const std::string &reduction) {
  Attrs a;
  a.s("reduction", reduction).i("has_ignore_index", c.hasIgnoreIndex ? 1 : 0);
  if (c.hasIgnoreIndex)
    a.i("ignore_index", c.ignoreIndex);
  return a;
}

std::vector<int64_t> lossTargetShape(const std::vector<int64_t> &inputShape) {
  std::vector<int64_t> shape = inputShape;
  shape.erase(shape.begin() + 1);
  return shape;
}

// `softmax` selects softmax_cross_entropy_loss (differentiated with respect to the scores) over
// nll_loss (with respect to its input). Targets are of index type I.
template <typename I> void checkLossGrad(bool softmax) {
  const char *forwardName = softmax ? "softmax_cross_entropy_loss" : "nll_loss";
  const char *gradName = softmax ? "softmax_cross_entropy_loss_grad" : "nll_loss_grad";
  unsigned seed = softmax ? 500 : 600;
  for (const LossGradCase &c : kLossCases) {
    for (const std::string reduction : {"mean", "sum", "none"}) {
      SCOPED_TRACE(::testing::Message() << gradName << " " << reduction << " N=" << c.inputShape[0]
                                        << " C=" << c.inputShape[1]);
      const std::vector<int64_t> tShape = lossTargetShape(c.inputShape);
      const std::vector<int64_t> lossShape = reduction == "none" ? tShape : std::vector<int64_t>{};
      const int64_t n = numelOf(c.inputShape);
      // nll_loss is linear in its input; log-probability-like values keep it realistic.
      const auto input = softmax ? randomFloats(n, -3, 3, seed++) : randomFloats(n, -4, 0, seed++);
      const auto weight = randomFloats(c.inputShape[1], 0.3f, 2.0f, seed++);
      const auto cot = randomFloats(numelOf(lossShape), 0.5f, 2.0f, seed++);
      const std::vector<I> targets(c.targets.begin(), c.targets.end());
      HostTensor tTargets = HostTensor::of(tShape, targets);
      HostTensor tWeight = HostTensor::of({c.inputShape[1]}, weight);
      const Tensor weightOrAbsent = c.hasWeight ? tWeight.view() : absent();
      const Attrs attrs = lossAttrs(c, reduction);
      auto forward = [&](const std::vector<float> &v) {
        HostTensor loss(program::F32, lossShape);
        EXPECT_KERNEL_OK(runKernel(forwardName,
                                   {HostTensor::of(c.inputShape, v), tTargets, weightOrAbsent},
                                   {loss}, attrs));
        return loss.values<float>();
      };

      HostTensor grad(program::F32, c.inputShape);
      HostTensor dloss = HostTensor::of(lossShape, cot);
      if (softmax) {
        HostTensor loss(program::F32, lossShape), logProb(program::F32, c.inputShape);
        ASSERT_KERNEL_OK(runKernel(forwardName,
                                   {HostTensor::of(c.inputShape, input), tTargets, weightOrAbsent},
                                   {loss, logProb}, attrs));
        ASSERT_KERNEL_OK(
            runKernel(gradName, {dloss, logProb, tTargets, weightOrAbsent}, {grad}, attrs));
      } else {
        ASSERT_KERNEL_OK(runKernel(gradName, {dloss, tTargets, weightOrAbsent}, {grad}, attrs));
      }
      expectMatchesNumeric(grad.values<float>(), numericGradient(forward, input, cot, kLossStep),
                           "dinput");
    }
  }
}

TEST(SoftmaxCrossEntropyLossGrad, MatchesFiniteDifferences) {
  checkLossGrad<int64_t>(true);
  checkLossGrad<int32_t>(true);
}

TEST(NllLossGrad, MatchesFiniteDifferences) {
  checkLossGrad<int64_t>(false);
  checkLossGrad<int32_t>(false);
}

// Two samples, two classes, scores 0 (softmax 0.5 each), labels [1, 0], weights [1, 3].
TEST(SoftmaxCrossEntropyLossGrad, HandComputed) {
  HostTensor dloss = HostTensor::scalar<float>(1.0f);
  HostTensor logProb = HostTensor::of<float>({2, 2}, std::vector<float>(4, std::log(0.5f)));
  HostTensor labels = HostTensor::of<int64_t>({2}, {1, 0});
  HostTensor weights = HostTensor::of<float>({2}, {1, 3});
  HostTensor dscores(program::F32, {2, 2});
  // mean: the denominator is w[1] + w[0] = 4, so the coefficients are 3/4 and 1/4.
  ASSERT_KERNEL_OK(runKernel("softmax_cross_entropy_loss_grad", {dloss, logProb, labels, weights},
                             {dscores}, Attrs().s("reduction", "mean").i("has_ignore_index", 0)));
  expectValuesNear(dscores.values<float>(), {0.375f, -0.375f, -0.125f, 0.125f}, 1e-6);
  // sum, dloss 2: coefficients 2*3 and 2*1.
  HostTensor two = HostTensor::scalar<float>(2.0f);
  ASSERT_KERNEL_OK(runKernel("softmax_cross_entropy_loss_grad", {two, logProb, labels, weights},
                             {dscores}, Attrs().s("reduction", "sum").i("has_ignore_index", 0)));
  expectValuesNear(dscores.values<float>(), {3, -3, -1, 1}, 1e-6);
  // mean ignoring class 0: only sample 0 counts, denominator 3, coefficient 1; sample 1 is 0.
  ASSERT_KERNEL_OK(
      runKernel("softmax_cross_entropy_loss_grad", {dloss, logProb, labels, weights}, {dscores},
                Attrs().s("reduction", "mean").i("has_ignore_index", 1).i("ignore_index", 0)));
  expectValuesNear(dscores.values<float>(), {0.5f, -0.5f, 0, 0}, 1e-6);
  // none, no weights: per-sample dloss.
  HostTensor perSample = HostTensor::of<float>({2}, {4, -2});
  ASSERT_KERNEL_OK(runKernel("softmax_cross_entropy_loss_grad", {perSample, logProb, labels},
                             {dscores}, Attrs().s("reduction", "none").i("has_ignore_index", 0)));
  expectValuesNear(dscores.values<float>(), {2, -2, 1, -1}, 1e-6);
}

TEST(NllLossGrad, HandComputed) {
  // Input [3, 3]; targets [2, 0, 2] with weights [2, 1, 0.5]: mean denominator 0.5 + 2 + 0.5.
  HostTensor targets = HostTensor::of<int32_t>({3}, {2, 0, 2});
  HostTensor weight = HostTensor::of<float>({3}, {2, 1, 0.5f});
  HostTensor dinput(program::F32, {3, 3});
  ASSERT_KERNEL_OK(runKernel("nll_loss_grad", {HostTensor::scalar<float>(3.0f), targets, weight},
                             {dinput}, Attrs().s("reduction", "mean").i("has_ignore_index", 0)));
  expectValuesNear(dinput.values<float>(), {0, 0, -0.5f, -2, 0, 0, 0, 0, -0.5f}, 1e-6);
  // Ignoring class 2 leaves sample 1 alone: -w[0] * 3 / w[0].
  ASSERT_KERNEL_OK(
      runKernel("nll_loss_grad", {HostTensor::scalar<float>(3.0f), targets, weight}, {dinput},
                Attrs().s("reduction", "mean").i("has_ignore_index", 1).i("ignore_index", 2)));
  expectValuesNear(dinput.values<float>(), {0, 0, 0, -3, 0, 0, 0, 0, 0}, 1e-6);
}

// With `mean` and every target ignored the forward is NaN; nothing contributes, so the
// gradient is zero everywhere (not NaN).
TEST(LossGrads, EverythingIgnoredGivesZeros) {
  HostTensor targets = HostTensor::of<int64_t>({2}, {1, 1});
  const Attrs attrs = Attrs().s("reduction", "mean").i("has_ignore_index", 1).i("ignore_index", 1);
  HostTensor dscores(program::F32, {2, 3}), dinput(program::F32, {2, 3});
  HostTensor logProb = HostTensor::of<float>({2, 3}, std::vector<float>(6, std::log(1.0f / 3)));
  ASSERT_KERNEL_OK(runKernel("softmax_cross_entropy_loss_grad",
                             {HostTensor::scalar<float>(1.0f), logProb, targets}, {dscores},
                             attrs));
  ASSERT_KERNEL_OK(
      runKernel("nll_loss_grad", {HostTensor::scalar<float>(1.0f), targets}, {dinput}, attrs));
  EXPECT_EQ(dscores.values<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(dinput.values<float>(), std::vector<float>(6, 0.0f));
}

TEST(LossGrads, Errors) {
  HostTensor scalar = HostTensor::scalar<float>(1.0f), logProb(program::F32, {2, 3});
  HostTensor targets = HostTensor::of<int64_t>({2}, {0, 2}), grad(program::F32, {2, 3});
  const Attrs mean = Attrs().s("reduction", "mean").i("has_ignore_index", 0);
  const char *sce = "softmax_cross_entropy_loss_grad";
  EXPECT_KERNEL_ERROR(runKernel(sce, {scalar, logProb}, {grad}, mean), "expected 3 to 4 inputs");
  EXPECT_KERNEL_ERROR(runKernel("nll_loss_grad", {scalar}, {grad}, mean), "expected 2 to 3 inputs");
  EXPECT_KERNEL_ERROR(runKernel(sce, {scalar, logProb, targets}, {grad},
                                Attrs().s("reduction", "avg").i("has_ignore_index", 0)),
                      "attribute 'reduction'");
  EXPECT_KERNEL_ERROR(runKernel(sce, {scalar, logProb, targets}, {grad},
                                Attrs().s("reduction", "mean").i("has_ignore_index", 1)),
                      "missing attribute 'ignore_index'");
  HostTensor outOfRange = HostTensor::of<int64_t>({2}, {0, 3});
  EXPECT_KERNEL_ERROR(runKernel(sce, {scalar, logProb, outOfRange}, {grad}, mean),
                      "target 3 is out of range for 3 classes");
  EXPECT_KERNEL_ERROR(runKernel("nll_loss_grad", {scalar, outOfRange}, {grad}, mean),
                      "target 3 is out of range");
  // `none` needs a per-position dloss; `mean` a scalar one.
  EXPECT_KERNEL_ERROR(runKernel(sce, {scalar, logProb, targets}, {grad},
                                Attrs().s("reduction", "none").i("has_ignore_index", 0)),
                      "dloss has shape []");
  HostTensor perSample(program::F32, {2});
  EXPECT_KERNEL_ERROR(runKernel("nll_loss_grad", {perSample, targets}, {grad}, mean),
                      "dloss has shape [2]");
  HostTensor logProbWrong(program::F32, {2, 4});
  EXPECT_KERNEL_ERROR(runKernel(sce, {scalar, logProbWrong, targets}, {grad}, mean),
                      "log_prob has shape [2x4]");
  HostTensor targetsWrong = HostTensor::of<int64_t>({3}, {0, 1, 2});
  EXPECT_KERNEL_ERROR(runKernel("nll_loss_grad", {scalar, targetsWrong}, {grad}, mean),
                      "target has shape [3]");
  HostTensor weightWrong(program::F32, {2}), targetsF(program::F32, {2});
  EXPECT_KERNEL_ERROR(runKernel("nll_loss_grad", {scalar, targets, weightWrong}, {grad}, mean),
                      "weight has shape [2]");
  EXPECT_KERNEL_ERROR(runKernel("nll_loss_grad", {scalar, targetsF}, {grad}, mean),
                      "expected i64 or i32");
  HostTensor grad1d(program::F32, {2});
  EXPECT_KERNEL_ERROR(runKernel("nll_loss_grad", {scalar, targets}, {grad1d}, mean),
                      "must be [N, C, d1..]");
}

// The loss backwards on each index block of the classes (docs/kernels.md, "Index blocks"): every
// block's gradient is exactly its slice of the whole gradient along C, so the blocks'
// gradients concatenate to the whole. softmax_cross_entropy_loss_grad gets its block of the
// whole log_prob.
template <typename I> void checkLossGradIndexBlocks(bool softmax) {
  const char *gradName = softmax ? "softmax_cross_entropy_loss_grad" : "nll_loss_grad";
  const std::vector<LossGradCase> cases = {
      {{5, 7}, {0, 6, 3, -100, 3}, false, true, -100},
      {{4, 7}, {6, 2, 5, 1}, false, false, 0},
      {{2, 7, 3}, {0, 6, 4, 4, 2, 1}, false, true, 4}, // ignore_index inside the class range
  };
  unsigned seed = 800;
  for (const LossGradCase &c : cases) {
    for (const std::string reduction : {"mean", "sum", "none"}) {
      const std::vector<int64_t> tShape = lossTargetShape(c.inputShape);
      const std::vector<int64_t> lossShape = reduction == "none" ? tShape : std::vector<int64_t>{};
      HostTensor targets =
          HostTensor::of(tShape, std::vector<I>(c.targets.begin(), c.targets.end()));
      HostTensor dloss =
          HostTensor::of(lossShape, randomFloats(numelOf(lossShape), 0.5f, 2, seed++));
      const Attrs attrs = lossAttrs(c, reduction);
      // The whole log_prob, from the forward.
      HostTensor loss(program::F32, lossShape), logProb(program::F32, c.inputShape);
      ASSERT_KERNEL_OK(runKernel(
          "softmax_cross_entropy_loss",
          {HostTensor::of(c.inputShape, randomFloats(numelOf(c.inputShape), -3, 3, seed++)),
           targets},
          {loss, logProb}, attrs));
      const std::vector<float> lp = logProb.values<float>();
      HostTensor whole(program::F32, c.inputShape);
      if (softmax)
        ASSERT_KERNEL_OK(runKernel(gradName, {dloss, logProb, targets}, {whole}, attrs));
      else
        ASSERT_KERNEL_OK(runKernel(gradName, {dloss, targets}, {whole}, attrs));
      const std::vector<float> expected = whole.values<float>();
      for (const std::vector<int64_t> &sizes : kIndexBlockSplitsOf7) {
        int64_t offset = 0;
        for (int64_t size : sizes) {
          SCOPED_TRACE(::testing::Message() << gradName << " " << reduction << " N="
                                            << c.inputShape[0] << " block " << offset << "+"
                                            << size);
          std::vector<int64_t> blockShape = c.inputShape;
          blockShape[1] = size;
          HostTensor grad(program::F32, blockShape);
          const Attrs blockAttrs = withIndexBlock(attrs, offset, 7);
          if (softmax) {
            HostTensor lpBlock =
                HostTensor::of(blockShape, sliceAlong(lp, c.inputShape, 1, offset, size));
            ASSERT_KERNEL_OK(runKernel(gradName, {dloss, lpBlock, targets}, {grad}, blockAttrs));
          } else {
            ASSERT_KERNEL_OK(runKernel(gradName, {dloss, targets}, {grad}, blockAttrs));
          }
          EXPECT_EQ(grad.values<float>(), sliceAlong(expected, c.inputShape, 1, offset, size));
          offset += size;
        }
      }
    }
  }
}

TEST(SoftmaxCrossEntropyLossGrad, IndexBlocksConcatenateToTheWholeGradient) {
  checkLossGradIndexBlocks<int64_t>(true);
  checkLossGradIndexBlocks<int32_t>(true);
}

TEST(NllLossGrad, IndexBlocksConcatenateToTheWholeGradient) {
  checkLossGradIndexBlocks<int64_t>(false);
  checkLossGradIndexBlocks<int32_t>(false);
}

TEST(LossGrads, IndexBlockErrors) {
  // Classes [3, 6) of 6.
  HostTensor scalar = HostTensor::scalar<float>(1.0f), logProb(program::F32, {2, 3});
  HostTensor targets = HostTensor::of<int64_t>({2}, {0, 5}), grad(program::F32, {2, 3});
  HostTensor weight = HostTensor::of<float>({3}, {1, 1, 1});
  const Attrs mean = Attrs().s("reduction", "mean").i("has_ignore_index", 0);
  const Attrs block = withIndexBlock(mean, 3, 6);
  for (const char *kernel : {"softmax_cross_entropy_loss_grad", "nll_loss_grad"}) {
    SCOPED_TRACE(kernel);
    const bool sce = std::string(kernel) == "softmax_cross_entropy_loss_grad";
    auto run = [&](const Tensor &t, const Tensor &w, const Attrs &attrs) {
      return sce ? runKernel(kernel, {scalar, logProb, t, w}, {grad}, attrs)
                 : runKernel(kernel, {scalar, t, w}, {grad}, attrs);
    };
    const std::string name = std::string(kernel) + ": ";
    EXPECT_KERNEL_OK(run(targets, absent(), block));
    EXPECT_KERNEL_ERROR(run(HostTensor::of<int64_t>({2}, {0, 6}), absent(), block),
                        name + "target 6 is out of range for 6 classes");
    EXPECT_KERNEL_ERROR(run(HostTensor::of<int32_t>({2}, {-1, 4}), absent(), block),
                        name + "target -1 is out of range for 6 classes");
    EXPECT_KERNEL_ERROR(run(targets, weight, block),
                        name + "class weights with a split class dimension are not supported");
    EXPECT_KERNEL_ERROR(run(targets, absent(), Attrs(mean).i("index_offset", 3)),
                        name + "attribute 'index_offset' needs 'index_size'");
    EXPECT_KERNEL_ERROR(run(targets, absent(), withIndexBlock(mean, 4, 6)),
                        name + "index_offset 4 and index_size 6 do not hold a block of the local "
                               "size 3");
    EXPECT_KERNEL_ERROR(run(targets, absent(), withIndexBlock(mean, 0, 2)),
                        name + "index_offset 0 and index_size 2");
  }
}

// ---- gather_grad ------------------------------------------------------------------------------

struct GatherCase {
  std::vector<int64_t> dataShape;
  int64_t axis;
  std::vector<int64_t> indicesShape;
  std::vector<int64_t> indices;
};

const std::vector<GatherCase> kGatherCases = {
    {{5, 3}, 0, {2, 2}, {1, 4, 1, -1}}, // 1 twice, 4 twice (once as -1): tied embedding rows
    {{2, 4, 3}, 1, {3}, {0, 3, 0}},
    {{2, 3, 4}, 2, {}, {2}}, // scalar index drops the axis
    {{3, 2}, 1, {4}, {1, 1, 1, -2}},
};

template <typename I> void checkGatherGrad() {
  unsigned seed = 700;
  for (const GatherCase &c : kGatherCases) {
    SCOPED_TRACE(::testing::Message() << "gather_grad axis " << c.axis);
    std::vector<int64_t> yShape(c.dataShape.begin(), c.dataShape.begin() + c.axis);
    yShape.insert(yShape.end(), c.indicesShape.begin(), c.indicesShape.end());
    yShape.insert(yShape.end(), c.dataShape.begin() + c.axis + 1, c.dataShape.end());
    const auto data = randomFloats(numelOf(c.dataShape), -2, 2, seed++);
    const auto cot = randomFloats(numelOf(yShape), -1, 1, seed++);
    HostTensor indices =
        HostTensor::of(c.indicesShape, std::vector<I>(c.indices.begin(), c.indices.end()));
    const Attrs attrs = Attrs().i("axis", c.axis);
    auto forward = [&](const std::vector<float> &v) {
      HostTensor y(program::F32, yShape);
      EXPECT_KERNEL_OK(runKernel("gather", {HostTensor::of(c.dataShape, v), indices}, {y}, attrs));
      return y.values<float>();
    };
    HostTensor ddata(program::F32, c.dataShape);
    ASSERT_KERNEL_OK(
        runKernel("gather_grad", {HostTensor::of(yShape, cot), indices}, {ddata}, attrs));
    expectMatchesNumeric(ddata.values<float>(), numericGradient(forward, data, cot), "ddata");
  }
}

TEST(GatherGrad, MatchesFiniteDifferences) {
  checkGatherGrad<int64_t>();
  checkGatherGrad<int32_t>();
}

TEST(GatherGrad, RepeatedIndicesAccumulate) {
  // Rows 0 (twice, once as -3) and 2 of a [3, 2] table.
  HostTensor ddata(program::F32, {3, 2});
  ASSERT_KERNEL_OK(runKernel(
      "gather_grad",
      {HostTensor::of<float>({3, 2}, {1, 2, 3, 4, 5, 6}), HostTensor::of<int64_t>({3}, {0, 2, -3})},
      {ddata}, Attrs().i("axis", 0)));
  EXPECT_EQ(ddata.values<float>(), (std::vector<float>{6, 8, 0, 0, 3, 4}));
  // Along axis 1, with no index at all: every element is written (zero).
  HostTensor dempty(program::F32, {2, 3});
  ASSERT_KERNEL_OK(runKernel("gather_grad",
                             {HostTensor(program::F32, {2, 0}), HostTensor(program::I32, {0})},
                             {dempty}, Attrs().i("axis", 1)));
  EXPECT_EQ(dempty.values<float>(), std::vector<float>(6, 0.0f));
}

// gather_grad on each index block of ddata's axis (docs/kernels.md, "Index blocks"): every
// block's ddata is exactly its slice of the whole ddata, so the blocks' outputs concatenate to
// the whole.
template <typename I> void checkGatherGradIndexBlocks() {
  const std::vector<GatherCase> cases = {
      {{7, 3}, 0, {2, 3}, {1, 6, 1, -1, -7, 3}}, // 1 twice, 6 twice (once as -1), 0 as -7
      {{2, 7, 2}, 1, {4}, {-2, 0, 5, 5}},
      {{7}, 0, {}, {-4}},
  };
  unsigned seed = 900;
  for (const GatherCase &c : cases) {
    std::vector<int64_t> yShape(c.dataShape.begin(), c.dataShape.begin() + c.axis);
    yShape.insert(yShape.end(), c.indicesShape.begin(), c.indicesShape.end());
    yShape.insert(yShape.end(), c.dataShape.begin() + c.axis + 1, c.dataShape.end());
    HostTensor dy = HostTensor::of(yShape, randomFloats(numelOf(yShape), -1, 1, seed++));
    HostTensor indices =
        HostTensor::of(c.indicesShape, std::vector<I>(c.indices.begin(), c.indices.end()));
    const Attrs attrs = Attrs().i("axis", c.axis);
    HostTensor whole(program::F32, c.dataShape);
    ASSERT_KERNEL_OK(runKernel("gather_grad", {dy, indices}, {whole}, attrs));
    const std::vector<float> expected = whole.values<float>();
    for (const std::vector<int64_t> &sizes : kIndexBlockSplitsOf7) {
      int64_t offset = 0;
      for (int64_t size : sizes) {
        SCOPED_TRACE(::testing::Message()
                     << "axis " << c.axis << " block " << offset << "+" << size);
        std::vector<int64_t> blockShape = c.dataShape;
        blockShape[c.axis] = size;
        HostTensor ddata(program::F32, blockShape);
        ASSERT_KERNEL_OK(
            runKernel("gather_grad", {dy, indices}, {ddata}, withIndexBlock(attrs, offset, 7)));
        EXPECT_EQ(ddata.values<float>(),
                  sliceAlong(expected, c.dataShape, static_cast<size_t>(c.axis), offset, size));
        offset += size;
      }
    }
  }
}

TEST(GatherGrad, IndexBlocksConcatenateToTheWholeGradient) {
  checkGatherGradIndexBlocks<int64_t>();
  checkGatherGradIndexBlocks<int32_t>();
}

TEST(GatherGrad, IndexBlockErrors) {
  // Rows [3, 6) of a table of 6.
  HostTensor dy(program::F32, {2, 2}), ddata(program::F32, {3, 2});
  HostTensor ok = HostTensor::of<int64_t>({2}, {0, 5});
  const Attrs axis0 = Attrs().i("axis", 0);
  EXPECT_KERNEL_OK(runKernel("gather_grad", {dy, ok}, {ddata}, withIndexBlock(axis0, 3, 6)));
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, HostTensor::of<int64_t>({2}, {6, 0})}, {ddata},
                                withIndexBlock(axis0, 3, 6)),
                      "gather_grad: index 6 is out of range for axis 0 of size 6 (index_size)");
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, HostTensor::of<int32_t>({2}, {0, -7})},
                                {ddata}, withIndexBlock(axis0, 3, 6)),
                      "gather_grad: index -7 is out of range");
  EXPECT_KERNEL_ERROR(
      runKernel("gather_grad", {dy, ok}, {ddata}, Attrs().i("axis", 0).i("index_size", 6)),
      "gather_grad: attribute 'index_size' needs 'index_offset'");
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, ok}, {ddata}, withIndexBlock(axis0, 4, 6)),
                      "gather_grad: index_offset 4 and index_size 6 do not hold a block of the "
                      "local size 3");
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, ok}, {ddata}, withIndexBlock(axis0, -1, 6)),
                      "gather_grad: index_offset -1");
}

TEST(GatherGrad, Errors) {
  HostTensor dy(program::F32, {2, 2}), ddata(program::F32, {3, 2});
  HostTensor indices = HostTensor::of<int64_t>({2}, {0, 3});
  const Attrs attrs = Attrs().i("axis", 0);
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, indices}, {ddata}, attrs),
                      "index 3 is out of range for axis 0 of size 3");
  HostTensor negative = HostTensor::of<int32_t>({2}, {0, -4});
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, negative}, {ddata}, attrs), "index -4");
  HostTensor ok = HostTensor::of<int64_t>({2}, {0, 2});
  HostTensor dyWrong(program::F32, {2, 3});
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dyWrong, ok}, {ddata}, attrs),
                      "dy has shape [2x3], expected [2x2]");
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, ok}, {ddata}, Attrs().i("axis", 2)),
                      "out of range for rank 2");
  HostTensor floatIndices(program::F32, {2});
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, floatIndices}, {ddata}, attrs),
                      "expected i64 or i32");
  HostTensor ddataInt(program::I64, {3, 2});
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, ok}, {ddataInt}, attrs), "ddata is i64");
  EXPECT_KERNEL_ERROR(runKernel("gather_grad", {dy, ok}, {ddata}), "missing attribute 'axis'");
}

// ---- reduce_max_grad --------------------------------------------------------------------------

struct ReduceCase {
  std::vector<int64_t> shape;
  std::vector<int64_t> axes;
  int64_t keepdims;
};

const std::vector<ReduceCase> kReduceCases = {
    {{3, 4}, {1}, 0},    {{3, 4}, {0}, 1},          {{2, 3, 4}, {0, 2}, 0},
    {{2, 3, 4}, {1}, 1}, {{2, 3, 4}, {0, 1, 2}, 0},
};

std::vector<int64_t> reducedShape(const ReduceCase &c) {
  std::vector<int64_t> shape;
  for (size_t d = 0; d < c.shape.size(); ++d) {
    const bool reduced = std::find(c.axes.begin(), c.axes.end(), int64_t(d)) != c.axes.end();
    if (!reduced)
      shape.push_back(c.shape[d]);
    else if (c.keepdims)
      shape.push_back(1);
  }
  return shape;
}

TEST(ReduceMaxGrad, MatchesFiniteDifferences) {
  unsigned seed = 800;
  for (const ReduceCase &c : kReduceCases) {
    SCOPED_TRACE(::testing::Message() << "reduce_max_grad keepdims " << c.keepdims);
    const int64_t n = numelOf(c.shape);
    // Distinct values 0.05 apart (a shuffled ramp), so that no +-h step changes which element
    // is the maximum and the forward is differentiable at x.
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[static_cast<size_t>(i)] = -1.0f + 0.05f * static_cast<float>(i);
    std::shuffle(x.begin(), x.end(), std::mt19937(seed++));
    const std::vector<int64_t> yShape = reducedShape(c);
    const auto cot = randomFloats(numelOf(yShape), -1, 1, seed++);
    const Attrs attrs = Attrs().ints("axes", c.axes).i("keepdims", c.keepdims);
    auto forward = [&](const std::vector<float> &v) {
      HostTensor y(program::F32, yShape);
      EXPECT_KERNEL_OK(runKernel("reduce_max", {HostTensor::of(c.shape, v)}, {y}, attrs));
      return y.values<float>();
    };
    HostTensor tx = HostTensor::of(c.shape, x);
    HostTensor y = HostTensor::of(yShape, forward(x));
    HostTensor dx(program::F32, c.shape);
    ASSERT_KERNEL_OK(
        runKernel("reduce_max_grad", {HostTensor::of(yShape, cot), tx, y}, {dx}, attrs));
    expectMatchesNumeric(dx.values<float>(), numericGradient(forward, x, cot), "dx");
  }
}

// Ties share dy equally (PyTorch's amax backward); finite differences cannot check this, as the
// maximum is not differentiable at a tie.
TEST(ReduceMaxGrad, TiesShareTheGradientEqually) {
  HostTensor x = HostTensor::of<float>({2, 3}, {1, 3, 3, 2, 2, 2});
  HostTensor y = HostTensor::of<float>({2}, {3, 2});
  HostTensor dy = HostTensor::of<float>({2}, {6, 3});
  HostTensor dx(program::F32, {2, 3});
  ASSERT_KERNEL_OK(
      runKernel("reduce_max_grad", {dy, x, y}, {dx}, Attrs().ints("axes", {1}).i("keepdims", 0)));
  EXPECT_EQ(dx.values<float>(), (std::vector<float>{0, 3, 3, 1, 1, 1}));
  // Along axis 0 with keepdims: columns [1, 2], [3, 2], [3, 2] have maxima 2, 3, 3.
  HostTensor y0 = HostTensor::of<float>({1, 3}, {2, 3, 3});
  HostTensor dy0 = HostTensor::of<float>({1, 3}, {1, 2, 4});
  ASSERT_KERNEL_OK(
      runKernel("reduce_max_grad", {dy0, x, y0}, {dx}, Attrs().ints("axes", {0}).i("keepdims", 1)));
  EXPECT_EQ(dx.values<float>(), (std::vector<float>{0, 2, 4, 1, 0, 0}));
}

TEST(ReduceMaxGrad, NaNMaximumGoesToTheNaNInputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = HostTensor::of<float>({4}, {1, nan, 5, nan});
  HostTensor y(program::F32, {});
  const Attrs attrs = Attrs().ints("axes", {0}).i("keepdims", 0);
  ASSERT_KERNEL_OK(runKernel("reduce_max", {x}, {y}, attrs));
  HostTensor dx(program::F32, {4});
  ASSERT_KERNEL_OK(
      runKernel("reduce_max_grad", {HostTensor::scalar<float>(4.0f), x, y}, {dx}, attrs));
  EXPECT_EQ(dx.values<float>(), (std::vector<float>{0, 2, 0, 2}));
}

TEST(ReduceMaxGrad, Errors) {
  HostTensor x(program::F32, {2, 3}), y(program::F32, {2}), dy(program::F32, {2});
  HostTensor dx(program::F32, {2, 3});
  const Attrs attrs = Attrs().ints("axes", {1}).i("keepdims", 0);
  EXPECT_KERNEL_ERROR(runKernel("reduce_max_grad", {dy, x}, {dx}, attrs), "expected 3 inputs");
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_max_grad", {dy, x, y}, {dx}, Attrs().ints("axes", {}).i("keepdims", 0)),
      "'axes' is empty");
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_max_grad", {dy, x, y}, {dx}, Attrs().ints("axes", {1, 0}).i("keepdims", 0)),
      "sorted");
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_max_grad", {dy, x, y}, {dx}, Attrs().ints("axes", {2}).i("keepdims", 0)),
      "out of range");
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_max_grad", {dy, x, y}, {dx}, Attrs().ints("axes", {1}).i("keepdims", 1)),
      "y has shape [2], expected [2x1]");
  HostTensor dyWrong(program::F32, {3});
  EXPECT_KERNEL_ERROR(runKernel("reduce_max_grad", {dyWrong, x, y}, {dx}, attrs),
                      "dy has shape [3]");
  HostTensor dxWrong(program::F32, {3, 2});
  EXPECT_KERNEL_ERROR(runKernel("reduce_max_grad", {dy, x, y}, {dxWrong}, attrs),
                      "dx has shape [3x2]");
  HostTensor xInt(program::I64, {2, 3});
  EXPECT_KERNEL_ERROR(runKernel("reduce_max_grad", {dy, xInt, y}, {dx}, attrs), "x is i64");
  EXPECT_KERNEL_ERROR(runKernel("reduce_max_grad", {dy, x, y}, {dx}, Attrs().ints("axes", {1})),
                      "missing attribute 'keepdims'");
}

// ---- pad_for_slice ----------------------------------------------------------------------------

struct SliceCase {
  std::vector<int64_t> xShape;
  std::vector<int64_t> starts;
  std::vector<int64_t> steps;
  std::vector<int64_t> yShape;
};

const std::vector<SliceCase> kSliceCases = {
    {{5, 4}, {1, 0}, {2, 1}, {2, 4}},
    {{5, 4}, {4, 3}, {-2, -1}, {3, 2}},
    {{3, 4, 5}, {0, 1, 4}, {1, 2, -3}, {3, 2, 2}},
    {{6}, {2}, {1}, {3}},
};

TEST(PadForSlice, MatchesFiniteDifferences) {
  unsigned seed = 900;
  for (const SliceCase &c : kSliceCases) {
    SCOPED_TRACE(::testing::Message() << "pad_for_slice starts " << c.starts[0]);
    const auto x = randomFloats(numelOf(c.xShape), -2, 2, seed++);
    const auto cot = randomFloats(numelOf(c.yShape), -1, 1, seed++);
    const Attrs attrs = Attrs().ints("starts", c.starts).ints("steps", c.steps);
    auto forward = [&](const std::vector<float> &v) {
      HostTensor y(program::F32, c.yShape);
      EXPECT_KERNEL_OK(runKernel("slice", {HostTensor::of(c.xShape, v)}, {y}, attrs));
      return y.values<float>();
    };
    HostTensor dx(program::F32, c.xShape);
    ASSERT_KERNEL_OK(runKernel("pad_for_slice", {HostTensor::of(c.yShape, cot)}, {dx}, attrs));
    expectMatchesNumeric(dx.values<float>(), numericGradient(forward, x, cot), "dx");
  }
}

TEST(PadForSlice, HandComputed) {
  HostTensor dx(program::F32, {5});
  ASSERT_KERNEL_OK(runKernel("pad_for_slice", {HostTensor::of<float>({2}, {7, 8})}, {dx},
                             Attrs().ints("starts", {1}).ints("steps", {2})));
  EXPECT_EQ(dx.values<float>(), (std::vector<float>{0, 7, 0, 8, 0}));
  // Reversed columns of a [2, 3], any dtype.
  HostTensor dxInt(program::I64, {2, 3});
  ASSERT_KERNEL_OK(runKernel("pad_for_slice", {HostTensor::of<int64_t>({1, 2}, {1, 2})}, {dxInt},
                             Attrs().ints("starts", {1, 2}).ints("steps", {1, -2})));
  EXPECT_EQ(dxInt.values<int64_t>(), (std::vector<int64_t>{0, 0, 0, 2, 0, 1}));
  // An empty dy zeroes dx.
  HostTensor dxEmpty(program::F32, {3});
  ASSERT_KERNEL_OK(runKernel("pad_for_slice", {HostTensor(program::F32, {0})}, {dxEmpty},
                             Attrs().ints("starts", {3}).ints("steps", {1})));
  EXPECT_EQ(dxEmpty.values<float>(), std::vector<float>(3, 0.0f));
}

TEST(PadForSlice, Errors) {
  HostTensor dy(program::F32, {2}), dx(program::F32, {5});
  EXPECT_KERNEL_ERROR(
      runKernel("pad_for_slice", {dy}, {dx}, Attrs().ints("starts", {4}).ints("steps", {1})),
      "outside dx's extent 5");
  EXPECT_KERNEL_ERROR(
      runKernel("pad_for_slice", {dy}, {dx}, Attrs().ints("starts", {1}).ints("steps", {0})),
      "invalid step 0");
  EXPECT_KERNEL_ERROR(
      runKernel("pad_for_slice", {dy}, {dx}, Attrs().ints("starts", {1, 0}).ints("steps", {1, 1})),
      "one entry per dim");
  HostTensor dy2(program::F32, {2, 1});
  EXPECT_KERNEL_ERROR(
      runKernel("pad_for_slice", {dy2}, {dx}, Attrs().ints("starts", {0}).ints("steps", {1})),
      "must have the rank of dx");
  HostTensor dxInt(program::I32, {5});
  EXPECT_KERNEL_ERROR(
      runKernel("pad_for_slice", {dy}, {dxInt}, Attrs().ints("starts", {0}).ints("steps", {1})),
      "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("pad_for_slice", {dy}, {dx}, Attrs().ints("starts", {0})),
                      "missing attribute 'steps'");
}

} // namespace
} // namespace shardc::runtime::testing
