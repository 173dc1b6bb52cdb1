// attention and attention_grad on CUDA against the CPU kernels: the shapes of the CPU tests (S
// and Sk in {1, 7, 64, 65, 130}, D in {1, 8, 33}, Dv != D, 0 to 2 leading dims), every mask
// layout with -inf entries, causal with S == Sk and S < Sk, bf16, a fully masked row; and the
// shared checks' messages on both devices.
#include "tests/unit/cuda/cuda_compare.h"

#include <limits>

namespace shardc::runtime::testing {
namespace {

const std::vector<int64_t> kLengths = {1, 7, 64, 65, 130};
const std::vector<int64_t> kHeadDims = {1, 8, 33};
const std::vector<std::vector<int64_t>> kLeads = {{}, {3}, {2, 3}};

std::vector<int64_t> withDims(std::vector<int64_t> lead, int64_t rows, int64_t cols) {
  lead.push_back(rows);
  lead.push_back(cols);
  return lead;
}

// Mask layouts: 0 none, 1 [S, Sk], 2 [B, 1, .., Sk] (key padding), 3 [B, 1, S, Sk].
std::vector<int64_t> maskShape(int kind, const std::vector<int64_t> &lead, int64_t S,
                               int64_t Sk) {
  std::vector<int64_t> scores = withDims(lead, S, Sk);
  switch (kind) {
  case 1:
    return {S, Sk};
  case 2: {
    std::vector<int64_t> m(scores.size(), 1);
    if (!lead.empty())
      m.front() = lead.front();
    m.back() = Sk;
    return m;
  }
  default:
    for (size_t d = 1; d < lead.size(); ++d)
      scores[d] = 1;
    return scores;
  }
}

// Mask values in [-1, 1) with -inf on about every tenth entry, never on key 0 (so no row is
// fully masked), or on every entry of row `fullyMaskedRow` of the last two dims when >= 0.
Operand maskOperand(const std::vector<int64_t> &shape, uint32_t seed,
                    int64_t fullyMaskedRow = -1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> value(-1, 1), pick(0, 1);
  const int64_t cols = shape.back(), rows = shape.size() > 1 ? shape[shape.size() - 2] : 1;
  std::vector<double> values(static_cast<size_t>(numelOf(shape)));
  for (size_t e = 0; e < values.size(); ++e) {
    const int64_t col = static_cast<int64_t>(e) % cols, row = static_cast<int64_t>(e) / cols % rows;
    values[e] = value(gen);
    if ((col != 0 && pick(gen) < 0.1) || row == fullyMaskedRow)
      values[e] = -std::numeric_limits<double>::infinity();
  }
  return f32(shape, Fill::fixed(values));
}

struct Shape {
  std::vector<int64_t> lead;
  int64_t S, Sk, D, Dv;
  int mask;
  bool causal;
};

// The forward and backward cases of one shape. The backward's out and lse are random (both
// devices compute the same function of them); lse in [1, 3] keeps p = exp(s - lse) moderate.
void compareShape(const Shape &s, DType dtype, double tolerance, double gradTolerance,
                  uint32_t seed, int64_t fullyMaskedRow = -1) {
  const Operand q = typed(dtype, withDims(s.lead, s.S, s.D));
  const Operand k = typed(dtype, withDims(s.lead, s.Sk, s.D));
  const Operand v = typed(dtype, withDims(s.lead, s.Sk, s.Dv));
  const Operand mask = s.mask == 0 ? absentOperand()
                                   : maskOperand(maskShape(s.mask, s.lead, s.S, s.Sk), seed,
                                                 fullyMaskedRow);
  std::vector<int64_t> lseShape = s.lead;
  lseShape.push_back(s.S);
  Attrs attrs;
  attrs.f("scale", 1.0f / std::sqrt(static_cast<float>(s.D)));
  if (s.causal)
    attrs.i("causal", 1);

  KernelCase forward{"attention", {q, k, v, mask},
                     {typed(dtype, withDims(s.lead, s.S, s.Dv)), f32(lseShape)}, attrs,
                     tolerance, seed};
  compareWithCpu(forward);
  KernelCase backward{"attention_grad",
                      {q, k, v, mask, typed(dtype, withDims(s.lead, s.S, s.Dv)),
                       f32(lseShape, Fill::uniform(1, 3)),
                       typed(dtype, withDims(s.lead, s.S, s.Dv))},
                      {typed(dtype, withDims(s.lead, s.S, s.D)),
                       typed(dtype, withDims(s.lead, s.Sk, s.D)),
                       typed(dtype, withDims(s.lead, s.Sk, s.Dv))},
                      attrs, gradTolerance, seed + 1};
  compareWithCpu(backward);
}

TEST(CudaAttention, MatchesTheCpuOnOddShapesAndMasks) {
  SHARDC_REQUIRE_CUDA();
  uint32_t n = 0;
  for (int64_t S : kLengths)
    for (int64_t Sk : kLengths)
      for (int64_t D : kHeadDims) {
        const Shape s{kLeads[n % 3], S, Sk, D, D == 8 ? 5 : D + 3, static_cast<int>(n / 3 % 4),
                      false};
        SCOPED_TRACE("S " + std::to_string(S) + " Sk " + std::to_string(Sk) + " D " +
                     std::to_string(D));
        compareShape(s, program::F32, 1e-5, 1e-4, 10 + n++);
      }
}

TEST(CudaAttention, CausalMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  uint32_t n = 0;
  for (int64_t S : kLengths)
    for (int64_t Sk : kLengths) {
      if (S > Sk)
        continue;
      for (int mask = 0; mask < 4; ++mask) {
        const Shape s{kLeads[n % 3], S, Sk, kHeadDims[n % 3], kHeadDims[n % 3] + 2, mask, true};
        SCOPED_TRACE("S " + std::to_string(S) + " Sk " + std::to_string(Sk));
        compareShape(s, program::F32, 1e-5, 1e-4, 500 + n++);
      }
    }
}

// bf16 results may differ from the CPU's by one bf16 rounding of a slightly different f32 sum.
TEST(CudaAttention, Bf16MatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  uint32_t n = 0;
  for (const Shape &s : {Shape{{2, 3}, 7, 130, 8, 9, 3, false}, Shape{{2}, 65, 64, 33, 34, 1, false},
                         Shape{{}, 130, 7, 1, 2, 2, false}, Shape{{2, 3}, 64, 65, 8, 9, 2, true}})
    compareShape(s, program::BF16, 1e-2, 1e-2, 900 + n++);
}

// A fully masked row is NaN on both devices (out, and the gradients it reaches), lse -inf;
// causal with S > Sk masks the first S - Sk rows completely.
TEST(CudaAttention, FullyMaskedRowsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  compareShape(Shape{{2}, 70, 67, 5, 4, 3, false}, program::F32, 1e-5, 1e-4, 1000,
               /*fullyMaskedRow=*/66);
  compareShape(Shape{{2}, 9, 6, 3, 2, 0, true}, program::F32, 1e-5, 1e-4, 1001);
}

// Dropout draws the CPU's mask (the same Philox words and comparison), also for a block of the
// whole probability tensor.
TEST(CudaAttention, DropoutMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  const Operand seed = typed(program::I64, {}, Fill::fixed({12345}));
  const Operand step = typed(program::I64, {}, Fill::fixed({7}));
  for (bool block : {false, true}) {
    const std::vector<int64_t> lead = {2, 3};
    const int64_t S = 65, Sk = 70, D = 8, Dv = 6;
    Attrs attrs;
    attrs.f("scale", 0.35f).f("dropout_ratio", 0.3f).i("stream", 4).i("causal", 1);
    if (block)
      attrs.ints("global_shape", {6, 3, 200, 70}).i("split_dim", 0).i("split_offset", 4)
          .i("block_dim", 2).i("block_offset", 130);
    const Operand q = f32(withDims(lead, S, D)), k = f32(withDims(lead, Sk, D));
    const Operand v = f32(withDims(lead, Sk, Dv));
    const Operand mask = maskOperand(maskShape(2, lead, S, Sk), 77);
    std::vector<int64_t> lseShape = lead;
    lseShape.push_back(S);
    compareWithCpu(KernelCase{"attention", {q, k, v, mask, seed, step},
                              {f32(withDims(lead, S, Dv)), f32(lseShape)}, attrs, 1e-5, 31});
    compareWithCpu(KernelCase{"attention_grad",
                              {q, k, v, mask, f32(withDims(lead, S, Dv)),
                               f32(lseShape, Fill::uniform(1, 3)), f32(withDims(lead, S, Dv)),
                               seed, step},
                              {f32(withDims(lead, S, D)), f32(withDims(lead, Sk, D)),
                               f32(withDims(lead, Sk, Dv))},
                              attrs, 1e-4, 32});
  }
}

// The shared checks give the same one-line errors on both devices (no GPU needed: the operands
// are type-only, and the checks reject them before anything is read).
TEST(CudaAttention, BadCallsGetTheCpuErrors) {
  const Tensor q = typeOnlyTensor(program::F32, {2, 3, 4});
  const Tensor k = typeOnlyTensor(program::F32, {2, 5, 4});
  const Tensor v = typeOnlyTensor(program::F32, {2, 5, 6});
  const Tensor out = typeOnlyTensor(program::F32, {2, 3, 6});
  const Tensor lse = typeOnlyTensor(program::F32, {2, 3});
  const Tensor badMask = typeOnlyTensor(program::F32, {3, 4});
  EXPECT_EQ(expectSameErrorOnBothDevices("attention", {q, k, v, badMask}, {out, lse},
                                         Attrs().f("scale", 1.0f)),
            "attention: mask has shape [3x4], which does not broadcast to the scores' shape "
            "[2x3x5]");
  const Tensor badK = typeOnlyTensor(program::F32, {2, 5, 3});
  EXPECT_EQ(expectSameErrorOnBothDevices("attention", {q, badK, v}, {out, lse},
                                         Attrs().f("scale", 1.0f)),
            "attention: k has shape [2x5x3], expected [2x5x4]");
  const Tensor dq = typeOnlyTensor(program::F32, {2, 3, 4});
  const Tensor dv = typeOnlyTensor(program::F32, {2, 5, 6});
  EXPECT_EQ(expectSameErrorOnBothDevices("attention_grad", {q, k, v, Tensor(), out, lse, out},
                                         {dq, k, dv}, Attrs()),
            "attention_grad: missing attribute 'scale'");
}

} // namespace
} // namespace shardc::runtime::testing
