// The frozen-weight formats (runtime/support/quantized_weights.h) against values worked out by
// hand from their definitions, and quantized_matmul against the product of the dequantized
// weight summed in double, in both directions, across several row blocks, for every format.
#include "runtime/support/half_float.h"
#include "runtime/support/quantized_weights.h"
#include "tests/unit/kernels/test_support.h"

#include <cmath>
#include <thread>

namespace shardc::runtime::testing {
namespace {

using program::BF16;
using program::F32;
using program::I8;
using program::U8;

TEST(QuantizedWeights, Nf4CodesAreTheNearestValuesPackedHighNibbleFirst) {
  // Each NF4 value times 2, four times over: absmax 2, and every element is its own code.
  std::vector<float> w;
  for (int repeat = 0; repeat < 4; ++repeat)
    for (int code = 0; code < 16; ++code)
      w.push_back(2.0f * kNf4Values[code]);
  QuantizedWeight q = quantizeWeight(WeightFormat::Nf4, w.data(), 1, 64);
  ASSERT_EQ(q.codes.size(), 32u);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.scales[0], 2.0f);
  for (size_t i = 0; i < q.codes.size(); ++i)
    EXPECT_EQ(q.codes[i], ((2 * i % 16) << 4) | (2 * i % 16 + 1)) << "byte " << i;
  std::vector<float> back(64);
  dequantizeRows(WeightFormat::Nf4, q.codes.data(), q.scales.data(), 64, 0, 1, back.data());
  EXPECT_EQ(back, w);
}

TEST(QuantizedWeights, Nf4MidpointsGoToTheLowerCode) {
  std::vector<float> w(64, 0.0f);
  w[0] = 1.0f; // absmax 1: the others are normalised as they are
  // Halfway between 0 (code 7) and 0.0796 (code 8), and just above it.
  const float midpoint = static_cast<float>((0.0 + static_cast<double>(kNf4Values[8])) / 2.0);
  w[1] = midpoint;
  w[2] = std::nextafter(midpoint, 1.0f);
  w[3] = -1.0f;
  QuantizedWeight q = quantizeWeight(WeightFormat::Nf4, w.data(), 2, 32);
  EXPECT_EQ(q.codes[0], (15 << 4) | 7);
  EXPECT_EQ(q.codes[1], (8 << 4) | 0);
  EXPECT_EQ(q.codes[2], (7 << 4) | 7); // zeros are code 7 (NF4's exact 0)
}

TEST(QuantizedWeights, Nf4BlocksRunAcrossRows) {
  // [3, 64] flattened: blocks are rows here; [6, 32]: each block spans two rows.
  std::vector<float> w = randomFloats(192, -3.0f, 3.0f, 11);
  QuantizedWeight a = quantizeWeight(WeightFormat::Nf4, w.data(), 3, 64);
  QuantizedWeight b = quantizeWeight(WeightFormat::Nf4, w.data(), 6, 32);
  EXPECT_EQ(a.codes, b.codes);
  EXPECT_EQ(a.scales, b.scales);
  for (int blk = 0; blk < 3; ++blk) {
    float m = 0;
    for (int i = 0; i < 64; ++i)
      m = std::max(m, std::fabs(w[blk * 64 + i]));
    EXPECT_EQ(a.scales[blk], m);
  }
  // Rows 3..5 of the [6, 32] view dequantized alone: the second half of block 1, all of 2.
  std::vector<float> all(192), part(96);
  dequantizeRows(WeightFormat::Nf4, b.codes.data(), b.scales.data(), 32, 0, 6, all.data());
  dequantizeRows(WeightFormat::Nf4, b.codes.data(), b.scales.data(), 32, 3, 6, part.data());
  EXPECT_EQ(std::vector<float>(all.begin() + 96, all.end()), part);
}

TEST(QuantizedWeights, Int8RoundsHalfToEvenPerRow) {
  // Row 0: absmax 2, scale 127 / 2 = 63.5: 1 -> 63.5 -> 64 (a tie, to even), 0.5 -> 31.75 -> 32,
  // -2 -> -127. Row 1 is zero: zeros, absmax 0.
  const std::vector<float> w = {1.0f, -2.0f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  QuantizedWeight q = quantizeWeight(WeightFormat::Int8, w.data(), 2, 4);
  ASSERT_EQ(q.codes.size(), 8u);
  EXPECT_EQ(static_cast<int8_t>(q.codes[0]), 64);
  EXPECT_EQ(static_cast<int8_t>(q.codes[1]), -127);
  EXPECT_EQ(static_cast<int8_t>(q.codes[2]), 32);
  EXPECT_EQ(static_cast<int8_t>(q.codes[3]), 0);
  EXPECT_EQ(q.scales, (std::vector<float>{2.0f, 0.0f}));
  std::vector<float> back(8);
  dequantizeRows(WeightFormat::Int8, q.codes.data(), q.scales.data(), 4, 0, 2, back.data());
  const float step = 2.0f / 127.0f;
  EXPECT_EQ(back, (std::vector<float>{64 * step, -127 * step, 32 * step, 0, 0, 0, 0, 0}));
}

TEST(QuantizedWeights, Bf16IsRoundToNearestEven) {
  const std::vector<float> w = randomFloats(64, -5.0f, 5.0f, 3);
  QuantizedWeight q = quantizeWeight(WeightFormat::Bf16, w.data(), 8, 8);
  std::vector<float> back(64);
  dequantizeRows(WeightFormat::Bf16, q.codes.data(), nullptr, 8, 0, 8, back.data());
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(back[i], toFloat(toBFloat16(w[i])));
}

// The weight's codes and scales as the kernel's operands.
struct QuantizedOperands {
  HostTensor codes, scales;
  std::vector<float> dequantized; // [rows, cols]
};

QuantizedOperands quantized(WeightFormat format, const std::vector<float> &w, int64_t rows,
                            int64_t cols) {
  QuantizedWeight q = quantizeWeight(format, w.data(), rows, cols);
  QuantizedOperands out;
  if (format == WeightFormat::Nf4)
    out.codes = HostTensor(U8, {rows * cols / 2});
  else
    out.codes = HostTensor(format == WeightFormat::Int8 ? I8 : BF16, {rows, cols});
  std::memcpy(out.codes.view().data, q.codes.data(), q.codes.size());
  if (!q.scales.empty())
    out.scales = HostTensor::of<float>({static_cast<int64_t>(q.scales.size())}, q.scales);
  // The reference dequantization, from the formats' definitions.
  for (int64_t i = 0; i < rows * cols; ++i) {
    if (format == WeightFormat::Bf16) {
      BFloat16 b;
      std::memcpy(&b.bits, q.codes.data() + 2 * i, 2);
      out.dequantized.push_back(toFloat(b));
    } else if (format == WeightFormat::Int8) {
      out.dequantized.push_back(static_cast<float>(static_cast<int8_t>(q.codes[i])) *
                                (q.scales[i / cols] / 127.0f));
    } else {
      const int code = i % 2 == 0 ? q.codes[i / 2] >> 4 : q.codes[i / 2] & 15;
      out.dequantized.push_back(kNf4Values[code] * q.scales[i / 64]);
    }
  }
  return out;
}

// y = x · Wᵀ (x [m, cols]) or x · W (x [m, rows]) in double, and each element's magnitude.
void expectProduct(const std::vector<float> &y, const std::vector<float> &x,
                   const std::vector<float> &w, int64_t m, int64_t rows, int64_t cols,
                   bool untransposed) {
  const int64_t k = untransposed ? rows : cols, n = untransposed ? cols : rows;
  ASSERT_EQ(static_cast<int64_t>(y.size()), m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, size = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double term =
            static_cast<double>(x[i * k + p]) * (untransposed ? w[p * cols + j] : w[j * cols + p]);
        sum += term;
        size += std::fabs(term);
      }
      ASSERT_LE(std::fabs(y[i * n + j] - sum), (k + 2) * std::ldexp(size, -24))
          << "element " << i << "," << j;
    }
}

class QuantizedMatmul : public ::testing::TestWithParam<WeightFormat> {
protected:
  void TearDown() override { setCpuKernelThreads(std::max(1u, std::thread::hardware_concurrency())); }
};

TEST_P(QuantizedMatmul, MatchesTheDequantizedProductBothWays) {
  const WeightFormat format = GetParam();
  // cols 8192: blocks of 32 rows, so 80 rows take three (32, 32, 16); [6, 96]: nf4 blocks that
  // straddle rows; x with leading dims.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{80, 8192}, {6, 96}, {37, 128}}) {
    const std::vector<float> w = randomFloats(rows * cols, -0.2f, 0.2f, 5);
    QuantizedOperands q = quantized(format, w, rows, cols);
    for (bool untransposed : {false, true}) {
      const int64_t k = untransposed ? rows : cols, n = untransposed ? cols : rows;
      const std::vector<int64_t> xShape = {2, 3, k};
      const std::vector<float> x = randomFloats(6 * k, -1.0f, 1.0f, 9);
      HostTensor input = HostTensor::of<float>(xShape, x);
      HostTensor y(F32, {2, 3, n});
      Attrs attrs;
      attrs.s("format", weightFormatName(format)).i("rows", rows).i("cols", cols).i(
          "untransposed", untransposed ? 1 : 0);
      std::vector<Tensor> inputs = {input.view(), q.codes.view()};
      if (format != WeightFormat::Bf16)
        inputs.push_back(q.scales.view());
      setCpuKernelThreads(2);
      ASSERT_KERNEL_OK(runKernel("quantized_matmul", inputs, {y.view()}, attrs));
      expectProduct(y.values<float>(), x, q.dequantized, 6, rows, cols, untransposed);
      // One thread: the same bits.
      HostTensor alone(F32, {2, 3, n});
      setCpuKernelThreads(1);
      ASSERT_KERNEL_OK(runKernel("quantized_matmul", inputs, {alone.view()}, attrs));
      EXPECT_EQ(alone.values<float>(), y.values<float>()) << rows << "x" << cols;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedMatmul,
                         ::testing::Values(WeightFormat::Bf16, WeightFormat::Int8,
                                           WeightFormat::Nf4),
                         [](const auto &info) { return std::string(weightFormatName(info.param)); });

TEST(QuantizedMatmulErrors, MalformedOperandsAreRefused) {
  const std::vector<float> w = randomFloats(128, -1.0f, 1.0f, 1);
  QuantizedOperands q = quantized(WeightFormat::Nf4, w, 2, 64);
  HostTensor x = HostTensor::of<float>({3, 64}, randomFloats(192, -1.0f, 1.0f, 2));
  HostTensor y(F32, {3, 2});
  auto attrs = [](const std::string &format, int64_t rows, int64_t cols) {
    Attrs a;
    a.s("format", format).i("rows", rows).i("cols", cols).i("untransposed", 0);
    return a;
  };
  EXPECT_KERNEL_ERROR(runKernel("quantized_matmul", {x.view(), q.codes.view()}, {y.view()},
                                attrs("nf4", 2, 64)),
                      "needs its scales");
  EXPECT_KERNEL_ERROR(runKernel("quantized_matmul", {x.view(), q.codes.view(), q.scales.view()},
                                {y.view()}, attrs("fp8", 2, 64)),
                      "unknown format 'fp8'");
  EXPECT_KERNEL_ERROR(runKernel("quantized_matmul", {x.view(), q.codes.view(), q.scales.view()},
                                {y.view()}, attrs("nf4", 4, 32)),
                      "must end in the contracted size 32");
  EXPECT_KERNEL_ERROR(runKernel("quantized_matmul", {x.view(), q.codes.view(), q.scales.view()},
                                {y.view()}, attrs("int8", 2, 64)),
                      "codes");
  HostTensor oddX = HostTensor::of<float>({1, 10}, randomFloats(10, -1.0f, 1.0f, 2));
  HostTensor oddY(F32, {1, 3});
  HostTensor oddCodes(U8, {15});
  HostTensor oddScales = HostTensor::of<float>({1}, {1.0f});
  EXPECT_KERNEL_ERROR(runKernel("quantized_matmul",
                                {oddX.view(), oddCodes.view(), oddScales.view()}, {oddY.view()},
                                attrs("nf4", 3, 10)),
                      "nf4 needs a multiple of 64 elements, not 30");
}

} // namespace
} // namespace shardc::runtime::testing
