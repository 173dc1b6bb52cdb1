// adamw_update, sgd_update, global_norm and scale_by_clip against straightforward double
// transcriptions of the torch 1.13 formulas, run for several steps with each step's outputs fed
// back as the next step's inputs; plus malformed calls. Bit-exactness against torch itself is
// checked by optimizer_torch_test.cpp.
#include "tests/unit/kernels/test_support.h"

#include <cmath>
#include <limits>

namespace shardc::runtime::testing {
namespace {

constexpr int kSteps = 5;
const std::vector<std::vector<int64_t>> kShapes = {{3, 5}, {37}, {}, {0}};

std::vector<float> toFloat(const std::vector<double> &v) { return {v.begin(), v.end()}; }
std::vector<double> toDouble(const std::vector<float> &v) { return {v.begin(), v.end()}; }

struct AdamWConfig {
  float beta1, beta2, eps, weightDecay;
};

TEST(AdamWUpdate, MatchesReferenceOverSteps) {
  const AdamWConfig configs[] = {{0.9f, 0.999f, 1e-8f, 0.0f},
                                 {0.9f, 0.999f, 1e-8f, 0.01f},
                                 {0.8f, 0.99f, 1e-3f, 0.1f}};
  // A changing learning rate, as a schedule would feed it.
  const float lrs[kSteps] = {1e-3f, 2e-3f, 3e-3f, 2e-3f, 1e-3f};
  unsigned seed = 700;
  for (const AdamWConfig &c : configs) {
    for (const auto &shape : kShapes) {
      const int64_t n = numelOf(shape);
      std::vector<float> p = randomFloats(n, -1, 1, seed++);
      std::vector<float> m(n, 0.0f), v(n, 0.0f);
      std::vector<double> rp = toDouble(p), rm(n, 0.0), rv(n, 0.0);
      for (int step = 1; step <= kSteps; ++step) {
        const std::vector<float> g = randomFloats(n, -2, 2, seed++);
        HostTensor newP(program::F32, shape), newM(program::F32, shape),
            newV(program::F32, shape);
        ASSERT_KERNEL_OK(runKernel(
            "adamw_update",
            {HostTensor::of(shape, p), HostTensor::of(shape, g), HostTensor::of(shape, m),
             HostTensor::of(shape, v), HostTensor::scalar<int64_t>(step),
             HostTensor::scalar(lrs[step - 1])},
            {newP, newM, newV},
            Attrs().f("beta1", c.beta1).f("beta2", c.beta2).f("eps", c.eps).f("weight_decay",
                                                                              c.weightDecay)));
        // torch.optim.AdamW, _single_tensor_adamw, in double.
        const double lr = lrs[step - 1], b1 = c.beta1, b2 = c.beta2;
        const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
        for (int64_t i = 0; i < n; ++i) {
          rp[i] *= 1 - lr * c.weightDecay;
          rm[i] = rm[i] * b1 + (1 - b1) * g[i];
          rv[i] = rv[i] * b2 + (1 - b2) * g[i] * g[i];
          const double denom = std::sqrt(rv[i]) / std::sqrt(bc2) + c.eps;
          rp[i] += -(lr / bc1) * rm[i] / denom;
        }
        p = newP.values<float>();
        m = newM.values<float>();
        v = newV.values<float>();
        SCOPED_TRACE("step " + std::to_string(step) + ", numel " + std::to_string(n));
        expectValuesNear(p, toFloat(rp), 1e-5);
        expectValuesNear(m, toFloat(rm), 1e-5);
        expectValuesNear(v, toFloat(rv), 1e-5);
      }
    }
  }
}

// With the hyperparameters torch defaults to, one step moves each element by about lr.
TEST(AdamWUpdate, FirstStepMovesByLr) {
  HostTensor newP(program::F32, {3}), newM(program::F32, {3}), newV(program::F32, {3});
  ASSERT_KERNEL_OK(runKernel("adamw_update",
                             {HostTensor::of<float>({3}, {1, 1, 1}),
                              HostTensor::of<float>({3}, {0.5f, -2, 0}),
                              HostTensor::of<float>({3}, {0, 0, 0}),
                              HostTensor::of<float>({3}, {0, 0, 0}),
                              HostTensor::scalar<int64_t>(1), HostTensor::scalar(0.01f)},
                             {newP, newM, newV},
                             Attrs().f("beta1", 0.9f).f("beta2", 0.999f).f("eps", 1e-8f).f(
                                 "weight_decay", 0.0f)));
  expectValuesNear(newP.values<float>(), {0.99f, 1.01f, 1.0f}, 1e-6);
  expectValuesNear(newM.values<float>(), {0.05f, -0.2f, 0.0f}, 1e-6);
}

// Dynamic loss scaling's skip flag: nonzero keeps every output at its input's value (a step
// GradScaler skips), even with non-finite gradients; zero is the ordinary step.
TEST(AdamWUpdate, SkipFlagKeepsTheState) {
  const std::vector<int64_t> shape = {3};
  const HostTensor p = HostTensor::of<float>(shape, {1, -2, 3});
  const HostTensor m = HostTensor::of<float>(shape, {0.1f, 0.2f, 0.3f});
  const HostTensor v = HostTensor::of<float>(shape, {0.01f, 0.02f, 0.03f});
  const HostTensor g = HostTensor::of<float>(
      shape, {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 1});
  const Attrs attrs =
      Attrs().f("beta1", 0.9f).f("beta2", 0.999f).f("eps", 1e-8f).f("weight_decay", 0.01f);
  for (float skip : {1.0f, 0.0f}) {
    HostTensor newP(program::F32, shape), newM(program::F32, shape), newV(program::F32, shape);
    ASSERT_KERNEL_OK(runKernel("adamw_update",
                               {p, g, m, v, HostTensor::scalar<int64_t>(3),
                                HostTensor::scalar(1e-3f), HostTensor::scalar(skip)},
                               {newP, newM, newV}, attrs));
    if (skip != 0.0f) {
      EXPECT_EQ(newP.values<float>(), p.values<float>());
      EXPECT_EQ(newM.values<float>(), m.values<float>());
      EXPECT_EQ(newV.values<float>(), v.values<float>());
    } else {
      // Not skipped: the non-finite gradients reach the state, as an unguarded step would.
      EXPECT_FALSE(std::isfinite(newM.values<float>()[0]));
      EXPECT_NE(newP.values<float>()[2], p.values<float>()[2]);
    }
  }
}

TEST(SgdUpdate, SkipFlagKeepsTheState) {
  const std::vector<int64_t> shape = {2};
  const HostTensor p = HostTensor::of<float>(shape, {1, -2});
  const HostTensor b = HostTensor::of<float>(shape, {0.5f, 0.25f});
  const HostTensor g =
      HostTensor::of<float>(shape, {std::numeric_limits<float>::infinity(), 1.0f});
  HostTensor newP(program::F32, shape), newB(program::F32, shape);
  ASSERT_KERNEL_OK(runKernel("sgd_update",
                             {p, g, b, HostTensor::scalar<int64_t>(2), HostTensor::scalar(0.1f),
                              HostTensor::scalar(1.0f)},
                             {newP, newB},
                             Attrs().f("momentum", 0.9f).f("dampening", 0.0f).f("weight_decay",
                                                                                 0.0f).i("nesterov",
                                                                                         0)));
  EXPECT_EQ(newP.values<float>(), p.values<float>());
  EXPECT_EQ(newB.values<float>(), b.values<float>());
}

TEST(AdamWUpdate, RejectsAMalformedSkipFlag) {
  const std::vector<int64_t> shape = {2};
  HostTensor newP(program::F32, shape), newM(program::F32, shape), newV(program::F32, shape);
  Status status = runKernel(
      "adamw_update",
      {HostTensor::of<float>(shape, {1, 2}), HostTensor::of<float>(shape, {1, 2}),
       HostTensor::of<float>(shape, {0, 0}), HostTensor::of<float>(shape, {0, 0}),
       HostTensor::scalar<int64_t>(1), HostTensor::scalar(1e-3f),
       HostTensor::of<float>(shape, {1, 1})},
      {newP, newM, newV},
      Attrs().f("beta1", 0.9f).f("beta2", 0.999f).f("eps", 1e-8f).f("weight_decay", 0.0f));
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("skip"), std::string::npos) << status.message();
}

struct SgdConfig {
  float momentum, dampening, weightDecay;
  int64_t nesterov;
};

TEST(SgdUpdate, MatchesReferenceOverSteps) {
  const SgdConfig configs[] = {
      {0.0f, 0.0f, 0.0f, 0},  {0.0f, 0.0f, 1e-2f, 0}, // plain SGD, momentum 0
      {0.9f, 0.0f, 0.0f, 0},  {0.9f, 0.0f, 1e-2f, 0}, // momentum
      {0.9f, 0.0f, 0.0f, 1},  {0.9f, 0.0f, 1e-2f, 1}, // nesterov
      {0.5f, 0.25f, 1e-3f, 0}, // dampening
  };
  const float lrs[kSteps] = {0.1f, 0.05f, 0.05f, 0.02f, 0.01f};
  unsigned seed = 800;
  for (const SgdConfig &c : configs) {
    for (const auto &shape : kShapes) {
      const int64_t n = numelOf(shape);
      std::vector<float> p = randomFloats(n, -1, 1, seed++);
      // Garbage in the buffer before step 1: torch has none yet, so it must not be read.
      std::vector<float> buf(n, std::numeric_limits<float>::quiet_NaN());
      const std::vector<float> initialBuf = buf;
      std::vector<double> rp = toDouble(p), rbuf(n, 0.0);
      for (int step = 1; step <= kSteps; ++step) {
        const std::vector<float> g = randomFloats(n, -2, 2, seed++);
        HostTensor newP(program::F32, shape), newBuf(program::F32, shape);
        ASSERT_KERNEL_OK(runKernel(
            "sgd_update",
            {HostTensor::of(shape, p), HostTensor::of(shape, g), HostTensor::of(shape, buf),
             HostTensor::scalar<int64_t>(step), HostTensor::scalar(lrs[step - 1])},
            {newP, newBuf},
            Attrs()
                .f("momentum", c.momentum)
                .f("dampening", c.dampening)
                .f("weight_decay", c.weightDecay)
                .i("nesterov", c.nesterov)));
        // torch.optim.SGD, _single_tensor_sgd, in double.
        for (int64_t i = 0; i < n; ++i) {
          double dp = g[i];
          if (c.weightDecay != 0)
            dp += c.weightDecay * rp[i];
          if (c.momentum != 0) {
            rbuf[i] = step == 1 ? dp : c.momentum * rbuf[i] + (1 - double(c.dampening)) * dp;
            dp = c.nesterov ? dp + c.momentum * rbuf[i] : rbuf[i];
          }
          rp[i] -= double(lrs[step - 1]) * dp;
        }
        p = newP.values<float>();
        buf = newBuf.values<float>();
        SCOPED_TRACE("step " + std::to_string(step) + ", numel " + std::to_string(n));
        expectValuesNear(p, toFloat(rp), 1e-5);
        if (c.momentum != 0)
          expectValuesNear(buf, toFloat(rbuf), 1e-5);
        else
          expectValuesNear(buf, initialBuf); // copied through (NaN matches NaN)
      }
    }
  }
}

// Sizes around torch's 8-lane and 4-element groupings of the sum of squares.
TEST(GlobalNorm, MatchesReference) {
  const std::vector<std::vector<std::vector<int64_t>>> groups = {
      {{1}},
      {{3, 5}},
      {{37}, {2, 2}, {}, {8}},
      {{1000}, {12}, {7}, {0}, {4, 4, 3}},
      {{5}, {5}, {5}, {5}, {5}, {5}, {5}, {5}, {5}, {5}, {5}}, // more norms than one vector
  };
  unsigned seed = 900;
  for (const auto &shapes : groups) {
    std::vector<HostTensor> inputs;
    std::vector<Tensor> views;
    double sum = 0;
    for (const auto &shape : shapes) {
      const std::vector<float> x = randomFloats(numelOf(shape), -3, 3, seed++);
      for (float xi : x)
        sum += double(xi) * xi;
      inputs.push_back(HostTensor::of(shape, x));
      views.push_back(inputs.back());
    }
    HostTensor out(program::F32, {});
    ASSERT_KERNEL_OK(runKernel("global_norm", views, {out}));
    expectValuesNear(out.values<float>(), {static_cast<float>(std::sqrt(sum))}, 1e-6);
  }
  // Exact on values whose squares and sums are exact: norm(norm([3,4]), norm([12])) = 13.
  HostTensor out(program::F32, {});
  ASSERT_KERNEL_OK(runKernel("global_norm",
                             {HostTensor::of<float>({2}, {3, -4}), HostTensor::of<float>({1}, {12})},
                             {out}));
  EXPECT_EQ(out.values<float>()[0], 13.0f);
}

TEST(ScaleByClip, ScalesOnlyAboveMaxNorm) {
  const std::vector<float> g = randomFloats(10, -1, 1, 950);
  const float maxNorm = 1.0f;
  for (float totalNorm : {4.0f, 1.5f, 0.999f, 0.25f, 0.0f}) {
    HostTensor out(program::F32, {2, 5});
    ASSERT_KERNEL_OK(runKernel("scale_by_clip",
                               {HostTensor::of<float>({2, 5}, g), HostTensor::scalar(totalNorm)},
                               {out}, Attrs().f("max_norm", maxNorm)));
    const double coef = std::min(1.0, double(maxNorm) / (double(totalNorm) + 1e-6));
    std::vector<float> expected(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      expected[i] = static_cast<float>(g[i] * coef);
    SCOPED_TRACE("total_norm " + std::to_string(totalNorm));
    if (coef >= 1.0)
      EXPECT_EQ(out.values<float>(), g); // inactive: multiplied by exactly 1
    else
      expectValuesNear(out.values<float>(), expected, 1e-6);
  }
  // A NaN norm propagates, as torch.clamp keeps NaN; an infinite norm zeroes the gradient.
  HostTensor nanOut(program::F32, {2, 5}), infOut(program::F32, {2, 5});
  ASSERT_KERNEL_OK(runKernel(
      "scale_by_clip",
      {HostTensor::of<float>({2, 5}, g), HostTensor::scalar(std::numeric_limits<float>::quiet_NaN())},
      {nanOut}, Attrs().f("max_norm", maxNorm)));
  for (float y : nanOut.values<float>())
    EXPECT_TRUE(std::isnan(y));
  ASSERT_KERNEL_OK(runKernel(
      "scale_by_clip",
      {HostTensor::of<float>({2, 5}, g), HostTensor::scalar(std::numeric_limits<float>::infinity())},
      {infOut}, Attrs().f("max_norm", maxNorm)));
  for (float y : infOut.values<float>())
    EXPECT_EQ(std::fabs(y), 0.0f);
}

// ---- malformed calls --------------------------------------------------------------------------

Attrs adamwAttrs() {
  return Attrs().f("beta1", 0.9f).f("beta2", 0.999f).f("eps", 1e-8f).f("weight_decay", 0.01f);
}
Attrs sgdAttrs() {
  return Attrs().f("momentum", 0.9f).f("dampening", 0.0f).f("weight_decay", 0.0f).i("nesterov",
                                                                                     0);
}

TEST(AdamWUpdate, RejectsMalformedCalls) {
  HostTensor f4(program::F32, {4}), f5(program::F32, {5}), i4(program::I64, {4});
  HostTensor o1(program::F32, {4}), o2(program::F32, {4}), o3(program::F32, {4});
  HostTensor step = HostTensor::scalar<int64_t>(1), lr = HostTensor::scalar(1e-3f);
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {f4, f4, f4, f4, step}, {o1, o2, o3},
                                adamwAttrs()),
                      "expected 6 to 7 inputs, got 5");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {f4, f4, f4, f4, step, lr}, {o1, o2},
                                adamwAttrs()),
                      "expected 3 outputs");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {i4, f4, f4, f4, step, lr}, {o1, o2, o3},
                                adamwAttrs()),
                      "param is i64, expected f32");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {f4, f5, f4, f4, step, lr}, {o1, o2, o3},
                                adamwAttrs()),
                      "grad has shape [5], expected [4]");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {f4, f4, f4, f5, step, lr}, {o1, o2, o3},
                                adamwAttrs()),
                      "exp_avg_sq has shape [5]");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update",
                                {f4, f4, f4, f4, HostTensor::of<int64_t>({1}, {1}), lr},
                                {o1, o2, o3}, adamwAttrs()),
                      "step has shape [1], expected []");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {f4, f4, f4, f4, HostTensor::scalar(1.0f), lr},
                                {o1, o2, o3}, adamwAttrs()),
                      "step is f32, expected i64");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update",
                                {f4, f4, f4, f4, HostTensor::scalar<int64_t>(0), lr},
                                {o1, o2, o3}, adamwAttrs()),
                      "step must be >= 1, got 0");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {f4, f4, f4, f4, step, f4}, {o1, o2, o3},
                                adamwAttrs()),
                      "lr has shape [4], expected []");
  HostTensor badOut(program::F32, {5});
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {f4, f4, f4, f4, step, lr}, {o1, o2, badOut},
                                adamwAttrs()),
                      "new_exp_avg_sq has shape [5]");
  EXPECT_KERNEL_ERROR(runKernel("adamw_update", {f4, f4, f4, f4, step, lr}, {o1, o2, o3},
                                Attrs().f("beta1", 0.9f).f("beta2", 0.999f).f("eps", 1e-8f)),
                      "missing attribute 'weight_decay'");
}

TEST(SgdUpdate, RejectsMalformedCalls) {
  HostTensor f4(program::F32, {4}), f22(program::F32, {2, 2}), o1(program::F32, {4}),
      o2(program::F32, {4});
  HostTensor step = HostTensor::scalar<int64_t>(2), lr = HostTensor::scalar(0.1f);
  EXPECT_KERNEL_ERROR(runKernel("sgd_update", {f4, f4, f4, step}, {o1, o2}, sgdAttrs()),
                      "expected 5 to 6 inputs, got 4");
  EXPECT_KERNEL_ERROR(runKernel("sgd_update", {f4, f4, f22, step, lr}, {o1, o2}, sgdAttrs()),
                      "momentum_buffer has shape [2x2], expected [4]");
  EXPECT_KERNEL_ERROR(runKernel("sgd_update",
                                {f4, f4, f4, HostTensor::scalar<int64_t>(-3), lr}, {o1, o2},
                                sgdAttrs()),
                      "step must be >= 1, got -3");
  EXPECT_KERNEL_ERROR(runKernel("sgd_update",
                                {f4, f4, f4, step, HostTensor::scalar<int64_t>(1)}, {o1, o2},
                                sgdAttrs()),
                      "lr is i64, expected f32");
  EXPECT_KERNEL_ERROR(runKernel("sgd_update", {f4, f4, f4, step, lr}, {o1, f22}, sgdAttrs()),
                      "new_momentum_buffer has shape [2x2]");
  EXPECT_KERNEL_ERROR(runKernel("sgd_update", {f4, f4, f4, step, lr}, {o1, o2},
                                Attrs().f("momentum", 0.9f).f("dampening", 0.0f).f(
                                    "weight_decay", 0.0f)),
                      "missing attribute 'nesterov'");
}

TEST(GlobalNorm, RejectsMalformedCalls) {
  HostTensor f4(program::F32, {4}), i4(program::I64, {4}), out(program::F32, {}),
      out1(program::F32, {1});
  EXPECT_KERNEL_ERROR(runKernel("global_norm", {}, {out}), "expected at least 1");
  EXPECT_KERNEL_ERROR(runKernel("global_norm", {f4, i4}, {out}), "input 1 is i64, expected f32");
  EXPECT_KERNEL_ERROR(runKernel("global_norm", {f4}, {out1}),
                      "total_norm has shape [1], expected []");
  EXPECT_KERNEL_ERROR(runKernel("global_norm", {f4}, {out, out}), "expected 1 output");
}

TEST(ScaleByClip, RejectsMalformedCalls) {
  HostTensor f4(program::F32, {4}), o4(program::F32, {4}), o5(program::F32, {5});
  HostTensor norm = HostTensor::scalar(2.0f);
  const Attrs attrs = Attrs().f("max_norm", 1.0f);
  EXPECT_KERNEL_ERROR(runKernel("scale_by_clip", {f4}, {o4}, attrs), "expected 2 inputs");
  EXPECT_KERNEL_ERROR(runKernel("scale_by_clip", {f4, f4}, {o4}, attrs),
                      "total_norm has shape [4], expected []");
  EXPECT_KERNEL_ERROR(runKernel("scale_by_clip", {f4, norm}, {o5}, attrs),
                      "output has shape [5], expected [4]");
  EXPECT_KERNEL_ERROR(runKernel("scale_by_clip", {f4, norm}, {o4}), "missing attribute 'max_norm'");
}

} // namespace
} // namespace shardc::runtime::testing
