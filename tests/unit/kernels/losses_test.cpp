// softmax_cross_entropy_loss and nll_loss against a transcription of the ONNX reference
// implementation (per-element loss, gathered weights zeroed at ignore_index, mean divided by
// the sum of those weights).
#include "tests/unit/kernels/test_support.h"

#include <limits>

namespace shardc::runtime::testing {
namespace {

struct LossCase {
  std::vector<int64_t> inputShape; // [N, C, d1..]
  std::vector<int64_t> targets;    // [N, d1..], flattened
  bool hasWeight;
  bool hasIgnoreIndex;
  int64_t ignoreIndex;
};

// Returns the loss for `reduction` given log-probabilities laid out as input.
std::vector<float> referenceNll(const std::vector<double> &logProb, const LossCase &c,
                                const std::vector<float> &weight, const std::string &reduction) {
  const int64_t n = c.inputShape[0], classes = c.inputShape[1];
  const int64_t d = numelOf(c.inputShape) / (n * classes);
  std::vector<double> loss, gathered;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const int64_t t = c.targets[i * d + j];
      const bool ignored = c.hasIgnoreIndex && t == c.ignoreIndex;
      const double w = ignored ? 0.0 : (c.hasWeight ? weight[t] : 1.0);
      gathered.push_back(w);
      loss.push_back(ignored ? 0.0 : -logProb[(i * classes + t) * d + j] * w);
    }
  if (reduction == "none")
    return std::vector<float>(loss.begin(), loss.end());
  double sum = 0, weightSum = 0;
  for (size_t i = 0; i < loss.size(); ++i) {
    sum += loss[i];
    weightSum += gathered[i];
  }
  if (reduction == "sum")
    return {static_cast<float>(sum)};
  // mean: divided by the summed weights; that is the count of non-ignored targets without
  // weights, and N*d1*.. with neither weights nor ignore_index.
  return {static_cast<float>(sum / weightSum)};
}

const std::vector<LossCase> kCases = {
    {{3, 4}, {0, 3, 1}, false, false, 0},
    {{3, 4}, {0, 3, 1}, true, false, 0},
    {{4, 5}, {1, 1, 4, 0}, false, true, 1}, // ignore_index inside the class range
    {{4, 5}, {1, 1, 4, 0}, true, true, 1},
    {{3, 4}, {2, -100, 0}, true, true, -100}, // ignore_index outside the class range
    {{3, 4}, {2, -100, 0}, false, true, -100},
    {{2, 3, 2, 2}, {0, 1, 2, 2, 1, 1, 0, 2}, true, true, 2}, // [N, C, d1, d2]
    {{2, 3, 5}, {0, 1, 2, 0, 1, 2, 2, 1, 0, 0}, false, false, 0},
    {{2, 3}, {1, 1}, false, true, 1}, // everything ignored: mean is 0/0
};

// The Attrs for `c` and `reduction`.
Attrs lossAttrs(const LossCase &c, const std::string &reduction) {
  Attrs a;
  a.s("reduction", reduction).i("has_ignore_index", c.hasIgnoreIndex ? 1 : 0);
  if (c.hasIgnoreIndex)
    a.i("ignore_index", c.ignoreIndex);
  return a;
}

std::vector<int64_t> targetShape(const LossCase &c) {
  std::vector<int64_t> shape = c.inputShape;
  shape.erase(shape.begin() + 1);
  return shape;
}

template <typename I> void checkSoftmaxCrossEntropy() {
  unsigned seed = 200;
  for (const LossCase &c : kCases) {
    const int64_t classes = c.inputShape[1];
    const int64_t d = numelOf(c.inputShape) / (c.inputShape[0] * classes);
    const auto scores = randomFloats(numelOf(c.inputShape), -4, 4, seed++);
    const auto weight = randomFloats(classes, 0.2f, 2.0f, seed++);
    // log_softmax over the class axis in double.
    std::vector<double> logProb(scores.size());
    for (int64_t i = 0; i < c.inputShape[0]; ++i)
      for (int64_t j = 0; j < d; ++j) {
        double m = -1e300, sum = 0;
        for (int64_t k = 0; k < classes; ++k)
          m = std::max(m, double(scores[(i * classes + k) * d + j]));
        for (int64_t k = 0; k < classes; ++k)
          sum += std::exp(scores[(i * classes + k) * d + j] - m);
        for (int64_t k = 0; k < classes; ++k)
          logProb[(i * classes + k) * d + j] =
              scores[(i * classes + k) * d + j] - m - std::log(sum);
      }
    HostTensor x = HostTensor::of<float>(c.inputShape, scores);
    HostTensor labels =
        HostTensor::of<I>(targetShape(c), std::vector<I>(c.targets.begin(), c.targets.end()));
    HostTensor w = HostTensor::of<float>({classes}, weight);
    for (const std::string reduction : {"none", "sum", "mean"}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " " + reduction);
      const std::vector<int64_t> lossShape =
          reduction == "none" ? targetShape(c) : std::vector<int64_t>{};
      HostTensor loss(program::F32, lossShape), logProbOut(program::F32, c.inputShape);
      ASSERT_KERNEL_OK(runKernel("softmax_cross_entropy_loss",
                                 {x, labels, c.hasWeight ? w.view() : absent()}, {loss, logProbOut},
                                 lossAttrs(c, reduction)));
      expectValuesNear(loss.values<float>(), referenceNll(logProb, c, weight, reduction), 1e-5);
      expectValuesNear(logProbOut.values<float>(),
                       std::vector<float>(logProb.begin(), logProb.end()), 1e-6);
      // Without the optional log_prob output the loss is the same.
      HostTensor lossOnly(program::F32, lossShape);
      ASSERT_KERNEL_OK(runKernel("softmax_cross_entropy_loss",
                                 {x, labels, c.hasWeight ? w.view() : absent()}, {lossOnly},
                                 lossAttrs(c, reduction)));
      expectValuesNear(lossOnly.values<float>(), loss.values<float>());
    }
  }
}

TEST(SoftmaxCrossEntropyLoss, I64Labels) { checkSoftmaxCrossEntropy<int64_t>(); }
TEST(SoftmaxCrossEntropyLoss, I32Labels) { checkSoftmaxCrossEntropy<int32_t>(); }

TEST(SoftmaxCrossEntropyLoss, HandComputedMean) {
  // Two samples, uniform scores over 2 classes: each loss is ln 2. Weights 1 and 3:
  // mean = (1*ln2 + 3*ln2) / (1 + 3) = ln 2.
  HostTensor x = HostTensor::of<float>({2, 2}, {0, 0, 5, 5});
  HostTensor labels = HostTensor::of<int64_t>({2}, {0, 1});
  HostTensor w = HostTensor::of<float>({2}, {1, 3});
  HostTensor loss(program::F32, {});
  ASSERT_KERNEL_OK(runKernel("softmax_cross_entropy_loss", {x, labels, w}, {loss},
                             Attrs().s("reduction", "mean").i("has_ignore_index", 0)));
  EXPECT_NEAR(loss.values<float>()[0], 0.69314718f, 1e-6);
}

template <typename I> void checkNll() {
  unsigned seed = 300;
  for (const LossCase &c : kCases) {
    const auto input = randomFloats(numelOf(c.inputShape), -5, 0, seed++);
    const auto weight = randomFloats(c.inputShape[1], 0.2f, 2.0f, seed++);
    HostTensor x = HostTensor::of<float>(c.inputShape, input);
    HostTensor target =
        HostTensor::of<I>(targetShape(c), std::vector<I>(c.targets.begin(), c.targets.end()));
    HostTensor w = HostTensor::of<float>({c.inputShape[1]}, weight);
    for (const std::string reduction : {"none", "sum", "mean"}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " " + reduction);
      HostTensor loss(program::F32, reduction == "none" ? targetShape(c) : std::vector<int64_t>{});
      ASSERT_KERNEL_OK(runKernel("nll_loss", {x, target, c.hasWeight ? w.view() : absent()}, {loss},
                                 lossAttrs(c, reduction)));
      expectValuesNear(
          loss.values<float>(),
          referenceNll(std::vector<double>(input.begin(), input.end()), c, weight, reduction),
          1e-5);
    }
  }
}

TEST(NllLoss, I64Targets) { checkNll<int64_t>(); }
TEST(NllLoss, I32Targets) { checkNll<int32_t>(); }

// nll_loss on each index block of the classes (docs/kernels.md, "Index blocks"): a target
// another block holds adds 0 but still counts in the mean's denominator, so the blocks' losses
// sum to the whole loss for every reduction.
template <typename I> void checkNllIndexBlocks() {
  const std::vector<LossCase> cases = {
      {{5, 7}, {0, 6, 3, -100, 3}, false, true, -100},
      {{4, 7}, {6, 2, 5, 1}, false, false, 0},
      {{2, 7, 3}, {0, 6, 4, 4, 2, 1}, false, true, 4}, // ignore_index inside the class range
  };
  unsigned seed = 400;
  for (const LossCase &c : cases) {
    const auto input = randomFloats(numelOf(c.inputShape), -5, 0, seed++);
    HostTensor target =
        HostTensor::of<I>(targetShape(c), std::vector<I>(c.targets.begin(), c.targets.end()));
    for (const std::string reduction : {"none", "sum", "mean"}) {
      const std::vector<int64_t> lossShape =
          reduction == "none" ? targetShape(c) : std::vector<int64_t>{};
      HostTensor whole(program::F32, lossShape);
      ASSERT_KERNEL_OK(runKernel("nll_loss", {HostTensor::of<float>(c.inputShape, input), target},
                                 {whole}, lossAttrs(c, reduction)));
      for (const std::vector<int64_t> &sizes : kIndexBlockSplitsOf7) {
        std::vector<float> sum(static_cast<size_t>(numelOf(lossShape)), 0.0f);
        int64_t offset = 0;
        for (int64_t size : sizes) {
          SCOPED_TRACE(::testing::Message() << reduction << " N=" << c.inputShape[0] << " block "
                                            << offset << "+" << size);
          std::vector<int64_t> blockShape = c.inputShape;
          blockShape[1] = size;
          HostTensor block =
              HostTensor::of<float>(blockShape, sliceAlong(input, c.inputShape, 1, offset, size));
          HostTensor loss(program::F32, lossShape);
          ASSERT_KERNEL_OK(runKernel("nll_loss", {block, target}, {loss},
                                     withIndexBlock(lossAttrs(c, reduction), offset, 7)));
          const std::vector<float> part = loss.values<float>();
          for (size_t i = 0; i < part.size(); ++i)
            sum[i] += part[i];
          offset += size;
        }
        expectValuesNear(sum, whole.values<float>(), 1e-6);
      }
    }
  }
}

TEST(NllLoss, IndexBlocksSumToTheWholeLoss) {
  checkNllIndexBlocks<int64_t>();
  checkNllIndexBlocks<int32_t>();
}

TEST(Losses, IndexBlockErrors) {
  // Classes [3, 6) of 6.
  HostTensor x(program::F32, {2, 3}), scalar(program::F32, {});
  HostTensor t = HostTensor::of<int64_t>({2}, {0, 5});
  HostTensor w = HostTensor::of<float>({3}, {1, 1, 1});
  const Attrs mean = Attrs().s("reduction", "mean").i("has_ignore_index", 0);
  const Attrs block = withIndexBlock(mean, 3, 6);
  EXPECT_KERNEL_OK(runKernel("nll_loss", {x, t}, {scalar}, block));
  EXPECT_KERNEL_ERROR(
      runKernel("nll_loss", {x, HostTensor::of<int64_t>({2}, {0, 6})}, {scalar}, block),
      "nll_loss: target 6 is out of range for 6 classes");
  EXPECT_KERNEL_ERROR(
      runKernel("nll_loss", {x, HostTensor::of<int32_t>({2}, {-1, 0})}, {scalar}, block),
      "nll_loss: target -1 is out of range for 6 classes");
  EXPECT_KERNEL_ERROR(runKernel("nll_loss", {x, t, w}, {scalar}, block),
                      "nll_loss: class weights with a split class dimension are not supported");
  EXPECT_KERNEL_ERROR(runKernel("nll_loss", {x, t}, {scalar}, Attrs(mean).i("index_offset", 3)),
                      "nll_loss: attribute 'index_offset' needs 'index_size'");
  EXPECT_KERNEL_ERROR(runKernel("nll_loss", {x, t}, {scalar}, withIndexBlock(mean, 4, 6)),
                      "nll_loss: index_offset 4 and index_size 6 do not hold a block of the "
                      "local size 3");
  EXPECT_KERNEL_ERROR(runKernel("nll_loss", {x, t}, {scalar}, withIndexBlock(mean, 0, 2)),
                      "nll_loss: index_offset 0 and index_size 2");
  // softmax_cross_entropy_loss needs every class of a row for its softmax.
  const char *sce = "softmax_cross_entropy_loss";
  EXPECT_KERNEL_ERROR(runKernel(sce, {x, t}, {scalar}, block),
                      "softmax_cross_entropy_loss: index_offset/index_size (a split class "
                      "dimension) are not supported");
  EXPECT_KERNEL_ERROR(runKernel(sce, {x, t}, {scalar}, Attrs(mean).i("index_offset", 0)),
                      "softmax_cross_entropy_loss: index_offset/index_size");
  EXPECT_KERNEL_ERROR(runKernel(sce, {x, t}, {scalar}, Attrs(mean).i("index_size", 3)),
                      "softmax_cross_entropy_loss: index_offset/index_size");
}

TEST(Losses, InconsistentOperandsAreErrors) {
  HostTensor x(program::F32, {3, 4});
  HostTensor t = HostTensor::of<int64_t>({3}, {0, 4, 1}); // 4 is out of range
  HostTensor tOk = HostTensor::of<int64_t>({3}, {0, 3, 1});
  HostTensor scalar(program::F32, {}), perSample(program::F32, {3});
  const Attrs mean = Attrs().s("reduction", "mean").i("has_ignore_index", 0);
  for (const char *kernel : {"softmax_cross_entropy_loss", "nll_loss"}) {
    SCOPED_TRACE(kernel);
    EXPECT_KERNEL_ERROR(runKernel(kernel, {x, t}, {scalar}, mean),
                        "target 4 is out of range for 4 classes");
    EXPECT_KERNEL_ERROR(
        runKernel(kernel, {x, HostTensor::of<int64_t>({3}, {0, -1, 1})}, {scalar}, mean),
        "target -1 is out of range");
    EXPECT_KERNEL_ERROR(runKernel(kernel, {x, tOk}, {perSample}, mean), "expected []");
    EXPECT_KERNEL_ERROR(runKernel(kernel, {x, tOk}, {scalar},
                                  Attrs().s("reduction", "none").i("has_ignore_index", 0)),
                        "expected [3]");
    EXPECT_KERNEL_ERROR(runKernel(kernel, {x, tOk, HostTensor(program::F32, {3})}, {scalar}, mean),
                        "weight has shape [3], expected [4]");
    EXPECT_KERNEL_ERROR(
        runKernel(kernel, {x, HostTensor::of<int64_t>({2}, {0, 1})}, {scalar}, mean),
        "target has shape [2], expected [3]");
    EXPECT_KERNEL_ERROR(
        runKernel(kernel, {x, HostTensor::of<float>({3}, {0, 1, 2})}, {scalar}, mean),
        "expected i64 or i32");
    EXPECT_KERNEL_ERROR(runKernel(kernel, {HostTensor(program::F32, {3}), tOk}, {scalar}, mean),
                        "[N, C, d1..]");
    EXPECT_KERNEL_ERROR(runKernel(kernel, {x, tOk}, {scalar},
                                  Attrs().s("reduction", "avg").i("has_ignore_index", 0)),
                        "attribute 'reduction' must be");
    EXPECT_KERNEL_ERROR(runKernel(kernel, {x, tOk}, {scalar},
                                  Attrs().s("reduction", "mean").i("has_ignore_index", 1)),
                        "missing attribute 'ignore_index'");
    EXPECT_KERNEL_ERROR(runKernel(kernel, {x, tOk}, {scalar}, Attrs().s("reduction", "mean")),
                        "missing attribute 'has_ignore_index'");
  }
  EXPECT_KERNEL_ERROR(runKernel("softmax_cross_entropy_loss", {x, tOk},
                                {scalar, HostTensor(program::F32, {4, 3})}, mean),
                      "log_prob has shape [4x3], expected [3x4]");
}

} // namespace
} // namespace shardc::runtime::testing
