// layer_norm, softmax and log_softmax against double-precision references.
#include "tests/unit/kernels/test_support.h"

#include <limits>

namespace shardc::runtime::testing {
namespace {

struct LayerNormCase {
  std::vector<int64_t> x;
  int64_t axis;
  std::vector<int64_t> scale;
  std::vector<int64_t> bias; // ignored when !hasBias
  bool hasBias;
};

TEST(LayerNorm, AxesParamBroadcastAndStatistics) {
  const std::vector<LayerNormCase> cases = {
      {{2, 3, 4}, 2, {4}, {4}, true},       {{2, 3, 4}, 1, {3, 4}, {3, 4}, true},
      {{2, 3, 4}, 1, {1, 4}, {3, 1}, true}, // broadcast parameters
      {{2, 3, 4}, 0, {2, 3, 4}, {}, false}, {{5, 64}, 1, {64}, {64}, true},
      {{4, 1}, 1, {1}, {1}, true}, // one element per row: zero variance
      {{3, 7}, 1, {}, {}, false},  // scalar scale
  };
  const float epsilon = 1e-5f;
  unsigned seed = 50;
  for (const LayerNormCase &c : cases) {
    SCOPED_TRACE("case " + std::to_string(seed));
    const auto vx = randomFloats(numelOf(c.x), -3, 5, seed++);
    const auto vs = randomFloats(numelOf(c.scale), 0.5, 2, seed++);
    const auto vb = randomFloats(numelOf(c.bias), -1, 1, seed++);
    HostTensor x = HostTensor::of<float>(c.x, vx);
    HostTensor scale = HostTensor::of<float>(c.scale, vs);
    HostTensor bias = HostTensor::of<float>(c.bias, vb);
    std::vector<int64_t> statsShape = c.x;
    for (size_t d = c.axis; d < statsShape.size(); ++d)
      statsShape[d] = 1;
    HostTensor y(program::F32, c.x), mean(program::F32, statsShape),
        invStd(program::F32, statsShape);
    ASSERT_KERNEL_OK(runKernel("layer_norm", {x, scale, c.hasBias ? bias.view() : absent()},
                               {y, mean, invStd}, Attrs().i("axis", c.axis).f("epsilon", epsilon)));

    const std::vector<int64_t> normShape(c.x.begin() + c.axis, c.x.end());
    const int64_t normSize = numelOf(normShape), rows = numelOf(c.x) / normSize;
    std::vector<float> expectedY, expectedMean, expectedInvStd;
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < normSize; ++i)
        sum += vx[r * normSize + i];
      const double mu = sum / normSize;
      for (int64_t i = 0; i < normSize; ++i)
        sq += (vx[r * normSize + i] - mu) * (vx[r * normSize + i] - mu);
      const double inv = 1.0 / std::sqrt(sq / normSize + epsilon);
      expectedMean.push_back(static_cast<float>(mu));
      expectedInvStd.push_back(static_cast<float>(inv));
      for (int64_t i = 0; i < normSize; ++i) {
        const auto index = unravel(i, normShape);
        double v = (vx[r * normSize + i] - mu) * inv * vs[broadcastSource(index, c.scale)];
        if (c.hasBias)
          v += vb[broadcastSource(index, c.bias)];
        expectedY.push_back(static_cast<float>(v));
      }
    }
    expectValuesNear(y.values<float>(), expectedY, 1e-5);
    expectValuesNear(mean.values<float>(), expectedMean, 1e-6);
    expectValuesNear(invStd.values<float>(), expectedInvStd, 1e-5);
  }
}

TEST(LayerNorm, OptionalStatisticsOutputs) {
  const auto vx = randomFloats(12, -1, 1, 7);
  HostTensor x = HostTensor::of<float>({3, 4}, vx);
  HostTensor scale = HostTensor::of<float>({4}, {1, 1, 1, 1});
  const Attrs attrs = Attrs().i("axis", 1).f("epsilon", 1e-5f);
  HostTensor yFull(program::F32, {3, 4}), mean(program::F32, {3, 1}), inv(program::F32, {3, 1});
  ASSERT_KERNEL_OK(runKernel("layer_norm", {x, scale}, {yFull, mean, inv}, attrs));
  // Only y; y and an absent mean with a present inv_std_dev: y is the same each time.
  HostTensor y1(program::F32, {3, 4});
  ASSERT_KERNEL_OK(runKernel("layer_norm", {x, scale}, {y1}, attrs));
  expectValuesNear(y1.values<float>(), yFull.values<float>());
  HostTensor y2(program::F32, {3, 4}), inv2(program::F32, {3, 1});
  ASSERT_KERNEL_OK(runKernel("layer_norm", {x, scale, absent()}, {y2, absent(), inv2}, attrs));
  expectValuesNear(y2.values<float>(), yFull.values<float>());
  expectValuesNear(inv2.values<float>(), inv.values<float>());
}

// Softmax of x along `axis` in double.
std::vector<double> referenceSoftmax(const std::vector<float> &x, const std::vector<int64_t> &shape,
                                     int64_t axis, bool logOutput) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < numelOf(shape); ++i) {
    auto index = unravel(i, shape);
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < shape[axis]; ++j) {
      index[axis] = j;
      m = std::max(m, double(x[ravel(index, shape)]));
    }
    double sum = 0;
    for (int64_t j = 0; j < shape[axis]; ++j) {
      index[axis] = j;
      sum += std::exp(double(x[ravel(index, shape)]) - m);
    }
    y[i] = logOutput ? double(x[i]) - m - std::log(sum) : std::exp(double(x[i]) - m) / sum;
  }
  return y;
}

TEST(Softmax, EveryAxisBothKernels) {
  const std::vector<std::vector<int64_t>> shapes = {{5}, {2, 3}, {2, 3, 4}, {3, 1, 6}};
  unsigned seed = 60;
  for (const auto &shape : shapes) {
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
      for (bool logOutput : {false, true}) {
        const std::string kernel = logOutput ? "log_softmax" : "softmax";
        SCOPED_TRACE(kernel + " axis " + std::to_string(axis) + " rank " +
                     std::to_string(shape.size()));
        const auto vx = randomFloats(numelOf(shape), -10, 10, seed++);
        HostTensor x = HostTensor::of<float>(shape, vx);
        HostTensor y(program::F32, shape);
        ASSERT_KERNEL_OK(runKernel(kernel, {x}, {y}, Attrs().i("axis", axis)));
        const auto ref = referenceSoftmax(vx, shape, axis, logOutput);
        expectValuesNear(y.values<float>(), std::vector<float>(ref.begin(), ref.end()), 1e-6);
      }
    }
  }
}

TEST(Softmax, NumericallyStableForLargeAndInfiniteInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  HostTensor x = HostTensor::of<float>({2, 3}, {1000, 1001, 1002, -inf, 0, 0});
  HostTensor y(program::F32, {2, 3});
  ASSERT_KERNEL_OK(runKernel("softmax", {x}, {y}, Attrs().i("axis", 1)));
  expectValuesNear(y.values<float>(), {0.09003057f, 0.24472847f, 0.66524096f, 0.0f, 0.5f, 0.5f},
                   1e-6);
  ASSERT_KERNEL_OK(runKernel("log_softmax", {x}, {y}, Attrs().i("axis", 1)));
  expectValuesNear(y.values<float>(),
                   {-2.40760596f, -1.40760596f, -0.40760596f, -inf, -0.69314718f, -0.69314718f},
                   1e-6);
}

TEST(Softmax, NaNPoisonsItsSliceOnly) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = HostTensor::of<float>({2, 2}, {nan, 1.0f, 2.0f, 2.0f});
  HostTensor y(program::F32, {2, 2});
  // Along the contiguous axis: row 0 holds the NaN.
  ASSERT_KERNEL_OK(runKernel("softmax", {x}, {y}, Attrs().i("axis", 1)));
  expectValuesNear(y.values<float>(), {nan, nan, 0.5f, 0.5f});
  // Along the strided axis: column 0 holds the NaN.
  ASSERT_KERNEL_OK(runKernel("log_softmax", {x}, {y}, Attrs().i("axis", 0)));
  expectValuesNear(y.values<float>(), {nan, -1.31326169f, nan, -0.31326169f}, 1e-6);
}

TEST(NormSoftmax, InconsistentOperandsAreErrors) {
  HostTensor x(program::F32, {2, 3}), s3(program::F32, {3}), s2(program::F32, {2});
  HostTensor y(program::F32, {2, 3}), stats(program::F32, {2, 1}), wrongStats(program::F32, {2});
  const Attrs ln = Attrs().i("axis", 1).f("epsilon", 1e-5f);
  EXPECT_KERNEL_ERROR(runKernel("layer_norm", {x, s2}, {y}, ln), "cannot be broadcast to [3]");
  EXPECT_KERNEL_ERROR(runKernel("layer_norm", {x, s3, s2}, {y}, ln), "bias: shape [2]");
  EXPECT_KERNEL_ERROR(runKernel("layer_norm", {x, s3}, {y, wrongStats}, ln), "expected [2x1]");
  EXPECT_KERNEL_ERROR(runKernel("layer_norm", {x, s3}, {y, stats, stats, stats}, ln),
                      "expected 1 to 3 outputs, got 4");
  EXPECT_KERNEL_ERROR(runKernel("layer_norm", {x, s3}, {y}, Attrs().i("axis", 2).f("epsilon", 0)),
                      "out of range for rank 2");
  EXPECT_KERNEL_ERROR(runKernel("layer_norm", {x, s3}, {y}, Attrs().i("axis", 1)),
                      "missing attribute 'epsilon'");
  EXPECT_KERNEL_ERROR(runKernel("layer_norm", {x, absent()}, {y}, ln),
                      "input 1 is required but absent");
  EXPECT_KERNEL_ERROR(runKernel("softmax", {x}, {y}, Attrs().i("axis", 2)),
                      "out of range for rank 2");
  EXPECT_KERNEL_ERROR(runKernel("softmax", {x}, {y}), "missing attribute 'axis'");
  EXPECT_KERNEL_ERROR(
      runKernel("log_softmax", {x}, {HostTensor(program::F32, {3, 2})}, Attrs().i("axis", 1)),
      "expected [2x3]");
  EXPECT_KERNEL_ERROR(runKernel("softmax", {HostTensor(program::I64, {2, 3})},
                                {HostTensor(program::I64, {2, 3})}, Attrs().i("axis", 1)),
                      "x is i64, expected f32");
}

} // namespace
} // namespace shardc::runtime::testing
