// dropout: the keep-mask against Philox4x32-10 word by word, the scaling, and malformed calls.
#include "tests/unit/kernels/test_support.h"

#include "runtime/support/philox.h"

#include <cmath>

namespace shardc::runtime::testing {
namespace {

Attrs dropoutAttrs(float ratio, int64_t stream) {
  return Attrs().f("ratio", ratio).i("stream", stream);
}

struct DropoutResult {
  std::vector<float> y;
  std::vector<uint8_t> mask;
};

DropoutResult runDropout(const std::vector<float> &x, std::vector<int64_t> shape, int64_t seed,
                         int64_t step, float ratio, int64_t stream) {
  HostTensor y(program::F32, shape), mask(program::BOOL, shape);
  Status st = runKernel("dropout",
                        {HostTensor::of<float>(shape, x), HostTensor::scalar<int64_t>(seed),
                         HostTensor::scalar<int64_t>(step)},
                        {y, mask}, dropoutAttrs(ratio, stream));
  EXPECT_TRUE(st.isOk()) << st.message();
  return {y.values<float>(), mask.values<uint8_t>()};
}

// Element i is kept iff the uniform float of word i of stream (seed, step << 32 | stream) is at
// least the ratio; y = x * (kept ? 1/(1-ratio) : 0). 1500 elements cross the kernel's 256-word
// chunks and end inside a Philox block.
TEST(Dropout, MatchesPhiloxWordByWord) {
  const std::vector<int64_t> shape = {5, 300};
  const std::vector<float> x = randomFloats(1500, -3.0f, 3.0f, 11);
  const int64_t seed = 0x123456789abLL, step = 5, stream = 2;
  const float ratio = 0.3f;
  DropoutResult r = runDropout(x, shape, seed, step, ratio, stream);
  const PhiloxStream philox(static_cast<uint64_t>(seed), philoxStreamId(step, stream));
  const float scale = 1.0f / (1.0f - ratio);
  int64_t kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool keep = philox.uniform(i) >= ratio;
    kept += keep;
    ASSERT_EQ(r.mask[i], keep ? 1 : 0) << i;
    ASSERT_EQ(r.y[i], x[i] * (keep ? scale : 0.0f)) << i;
  }
  // 1500 Bernoulli(0.7) draws: mean 1050, standard deviation 17.7.
  EXPECT_GT(kept, 950);
  EXPECT_LT(kept, 1150);
}

TEST(Dropout, MaskDependsOnSeedStepAndStreamOnly) {
  const std::vector<int64_t> shape = {64};
  const std::vector<float> x = randomFloats(64, -1.0f, 1.0f, 5);
  const std::vector<float> ones(64, 1.0f);
  DropoutResult base = runDropout(x, shape, 7, 3, 0.5f, 1);
  EXPECT_EQ(runDropout(x, shape, 7, 3, 0.5f, 1).mask, base.mask);    // deterministic
  EXPECT_EQ(runDropout(ones, shape, 7, 3, 0.5f, 1).mask, base.mask); // not the data
  EXPECT_NE(runDropout(x, shape, 8, 3, 0.5f, 1).mask, base.mask);
  EXPECT_NE(runDropout(x, shape, 7, 4, 0.5f, 1).mask, base.mask);
  EXPECT_NE(runDropout(x, shape, 7, 3, 0.5f, 2).mask, base.mask);
}

// Runs dropout (seed 99, step 2, ratio 0.4, stream 3) on the block of `x` (of shape `whole`)
// that starts at `at` and has shape `block`, with the block `attrs`, and expects the whole
// tensor's mask and output `all` at each of its elements.
void expectBlockOfWhole(const std::vector<float> &x, const std::vector<int64_t> &whole,
                        const DropoutResult &all, const std::vector<int64_t> &block,
                        const std::vector<int64_t> &at, Attrs attrs) {
  std::vector<float> bx;
  std::vector<size_t> where; // the block's elements' indices in the whole tensor
  for (int64_t a = 0; a < block[0]; ++a)
    for (int64_t b = 0; b < block[1]; ++b)
      for (int64_t c = 0; c < block[2]; ++c) {
        size_t i = static_cast<size_t>(((a + at[0]) * whole[1] + b + at[1]) * whole[2] + c +
                                       at[2]);
        where.push_back(i);
        bx.push_back(x[i]);
      }
  HostTensor y(program::F32, block), mask(program::BOOL, block);
  Status st = runKernel("dropout",
                        {HostTensor::of<float>(block, bx), HostTensor::scalar<int64_t>(99),
                         HostTensor::scalar<int64_t>(2)},
                        {y, mask}, attrs.ints("global_shape", whole));
  ASSERT_TRUE(st.isOk()) << st.message();
  std::vector<uint8_t> m = mask.values<uint8_t>();
  std::vector<float> yy = y.values<float>();
  for (size_t k = 0; k < where.size(); ++k) {
    ASSERT_EQ(m[k], all.mask[where[k]]) << "element " << k;
    ASSERT_EQ(yy[k], all.y[where[k]]);
  }
}

// A block of a tensor split along one dimension (a rank's rows of the batch, or the middle
// dimension of a sequence-first tensor) draws exactly the whole tensor's mask for its elements.
TEST(Dropout, BlockOfASplitTensorDrawsTheWholeTensorsMask) {
  const std::vector<int64_t> whole = {4, 6, 70};
  const std::vector<float> x = randomFloats(4 * 6 * 70, -1.0f, 1.0f, 3);
  DropoutResult all = runDropout(x, whole, 99, 2, 0.4f, 3);
  for (int64_t dim : {0, 1, 2})
    for (int64_t offset : {int64_t{0}, int64_t{1}, int64_t{3}}) {
      std::vector<int64_t> block = whole, at = {0, 0, 0};
      block[dim] = 2;
      at[dim] = offset;
      if (offset + 2 > whole[dim])
        continue;
      SCOPED_TRACE("dim " + std::to_string(dim) + " offset " + std::to_string(offset));
      expectBlockOfWhole(x, whole, all, block, at,
                         dropoutAttrs(0.4f, 3).i("split_dim", dim).i("split_offset", offset));
    }
}

// A block split along the batch rows and, on another mesh axis, along a second dimension (a
// sequence- or tensor-parallel split) draws the whole tensor's mask at its elements.
TEST(Dropout, ABlockOfTwoSplitsDrawsTheWholeTensorsMask) {
  const std::vector<int64_t> whole = {4, 6, 70};
  const std::vector<float> x = randomFloats(4 * 6 * 70, -1.0f, 1.0f, 5);
  DropoutResult all = runDropout(x, whole, 99, 2, 0.4f, 3);
  for (int64_t blockDim : {1, 2}) {
    std::vector<int64_t> block = {2, 6, 70}, at = {2, 0, 0};
    block[blockDim] /= 2;
    at[blockDim] = block[blockDim];
    SCOPED_TRACE("block dim " + std::to_string(blockDim));
    expectBlockOfWhole(x, whole, all, block, at,
                       dropoutAttrs(0.4f, 3)
                           .i("split_dim", 0)
                           .i("split_offset", 2)
                           .i("block_dim", blockDim)
                           .i("block_offset", at[blockDim]));
  }
  // The same dimension named twice is no block.
  HostTensor x2 = HostTensor::of<float>({2, 3}, std::vector<float>(6, 1.0f));
  HostTensor y2(program::F32, {2, 3}), m2(program::BOOL, {2, 3});
  EXPECT_KERNEL_ERROR(runKernel("dropout",
                                {x2, HostTensor::scalar<int64_t>(1), HostTensor::scalar<int64_t>(0)},
                                {y2, m2},
                                dropoutAttrs(0.5f, 0)
                                    .ints("global_shape", {4, 3})
                                    .i("split_dim", 0)
                                    .i("split_offset", 2)
                                    .i("block_dim", 0)
                                    .i("block_offset", 0)),
                      "is not a block");
}

TEST(Dropout, RejectsABlockThatDoesNotFitTheWholeTensor) {
  const std::vector<int64_t> block = {2, 3};
  HostTensor x = HostTensor::of<float>(block, std::vector<float>(6, 1.0f));
  HostTensor y(program::F32, block), mask(program::BOOL, block);
  auto call = [&](std::vector<int64_t> whole, int64_t dim, int64_t offset) {
    return runKernel("dropout", {x, HostTensor::scalar<int64_t>(1), HostTensor::scalar<int64_t>(0)},
                     {y, mask},
                     dropoutAttrs(0.5f, 0).ints("global_shape", whole).i("split_dim", dim).i(
                         "split_offset", offset));
  };
  EXPECT_TRUE(call({4, 3}, 0, 2).isOk());
  EXPECT_KERNEL_ERROR(call({4, 3}, 0, 3), "is not a block at offsets [3, 0] of the whole tensor");
  EXPECT_KERNEL_ERROR(call({4, 4}, 0, 0), "is not a block");
  EXPECT_KERNEL_ERROR(call({4, 3}, 2, 0), "is not a block");
  EXPECT_KERNEL_ERROR(call({4, 3, 1}, 0, 0), "is not a block");
}

// As PyTorch's x * noise: a dropped negative element is -0, a dropped infinity NaN; ratio 0
// keeps everything unscaled.
TEST(Dropout, ProductSemantics) {
  const std::vector<int64_t> shape = {256};
  std::vector<float> x(256, -2.0f);
  x[0] = INFINITY;
  DropoutResult r = runDropout(x, shape, 1, 1, 0.5f, 0);
  for (size_t i = 1; i < x.size(); ++i)
    if (!r.mask[i]) {
      EXPECT_EQ(r.y[i], 0.0f);
      EXPECT_TRUE(std::signbit(r.y[i])) << i;
    } else {
      EXPECT_EQ(r.y[i], -4.0f);
    }
  EXPECT_TRUE(r.mask[0] ? std::isinf(r.y[0]) : std::isnan(r.y[0]));
  DropoutResult none = runDropout(x, shape, 1, 1, 0.0f, 0);
  EXPECT_EQ(none.y, x);
  EXPECT_EQ(none.mask, std::vector<uint8_t>(256, 1));
}

TEST(Dropout, RejectsMalformedCalls) {
  HostTensor x(program::F32, {4}), y(program::F32, {4}), mask(program::BOOL, {4});
  HostTensor xi(program::I64, {4}), y3(program::F32, {3});
  HostTensor seed = HostTensor::scalar<int64_t>(1), step = HostTensor::scalar<int64_t>(1);
  HostTensor seedF = HostTensor::scalar(1.0f), badStep = HostTensor::scalar<int64_t>(-1);
  HostTensor hugeStep = HostTensor::scalar<int64_t>(int64_t{1} << 32);
  EXPECT_KERNEL_ERROR(runKernel("dropout", {x, seed}, {y, mask}, dropoutAttrs(0.5f, 0)),
                      "expected 3 inputs");
  EXPECT_KERNEL_ERROR(runKernel("dropout", {xi, seed, step}, {y, mask}, dropoutAttrs(0.5f, 0)),
                      "x is i64, expected f32");
  EXPECT_KERNEL_ERROR(runKernel("dropout", {x, seedF, step}, {y, mask}, dropoutAttrs(0.5f, 0)),
                      "seed is f32, expected i64");
  EXPECT_KERNEL_ERROR(runKernel("dropout", {x, seed, step}, {y3, mask}, dropoutAttrs(0.5f, 0)),
                      "y");
  EXPECT_KERNEL_ERROR(runKernel("dropout", {x, seed, step}, {y, mask}, dropoutAttrs(1.0f, 0)),
                      "ratio must be in [0, 1)");
  EXPECT_KERNEL_ERROR(
      runKernel("dropout", {x, seed, step}, {y, mask}, dropoutAttrs(0.5f, 0xFFFFFFFFll)),
      "stream must be in [0, 2^32 - 1)");
  EXPECT_KERNEL_ERROR(runKernel("dropout", {x, seed, badStep}, {y, mask}, dropoutAttrs(0.5f, 0)),
                      "step -1 is outside");
  EXPECT_KERNEL_ERROR(runKernel("dropout", {x, seed, hugeStep}, {y, mask}, dropoutAttrs(0.5f, 0)),
                      "is outside [0, 2^32 - 1]");
  EXPECT_KERNEL_ERROR(runKernel("dropout", {x, seed, step}, {y, mask}, Attrs().f("ratio", 0.5f)),
                      "stream");
}

} // namespace
} // namespace shardc::runtime::testing
