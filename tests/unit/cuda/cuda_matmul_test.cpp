// matmul and gemm on cuBLASLt against the CPU kernels: odd shapes (no multiple of any tile),
// batches, every batch broadcast the CPU contract accepts, 1-D operands, transposes, alpha/beta
// with c of every broadcast shape, and 16-bit operands and results in every combination.
//
// Tolerances: an f32 result is within 1e-5 of the output's magnitude whatever the operand
// dtypes, because both devices form the exact products of the same (16-bit or f32) values in f32
// and differ only in the order of the f32 sums (k is at most 65 here). A 16-bit result may
// additionally round to the neighbouring 16-bit value when the two f32 sums straddle a rounding
// boundary: one bf16 ulp is 2^-8 relative, hence 1e-2.
#include "tests/unit/cuda/cuda_compare.h"

#include <array>

namespace shardc::runtime::testing {
namespace {

using program::BF16;
using program::F16;
using program::F32;

// f16 inputs: the harness writes f16 by hand for normal numbers only, so draw small integers
// (exact in f16) rather than uniform values that may fall below f16's normal range.
Fill fillFor(DType dtype) { return dtype == F16 ? Fill::integers(-3, 3) : Fill::uniform(-2, 2); }

KernelCase matmulCase(DType a, std::vector<int64_t> aShape, DType b, std::vector<int64_t> bShape,
                      DType y, std::vector<int64_t> yShape) {
  KernelCase c{"matmul",
               {typed(a, std::move(aShape), fillFor(a)), typed(b, std::move(bShape), fillFor(b))},
               {typed(y, std::move(yShape))}};
  c.tolerance = y == F32 ? 1e-5 : 1e-2;
  return c;
}

KernelCase f32Matmul(std::vector<int64_t> aShape, std::vector<int64_t> bShape,
                     std::vector<int64_t> yShape) {
  return matmulCase(F32, std::move(aShape), F32, std::move(bShape), F32, std::move(yShape));
}

TEST(CudaMatmul, OddShapesMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  // {m, k, n}
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {17, 33, 65}, {129, 7, 257},
                                                            {3, 64, 2}}) {
    KernelCase c = f32Matmul({m, k}, {k, n}, {m, n});
    c.seed = static_cast<uint32_t>(m + k + n);
    compareWithCpu(c);
  }
}

TEST(CudaMatmul, BatchesAndBroadcastBatchesMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  // {a, b, y}
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{3, 5, 7}, {3, 7, 9}, {3, 5, 9}},             // plain batch: one strided call
      {{2, 1, 4, 5}, {3, 5, 6}, {2, 3, 4, 6}},       // both broadcast
      {{4, 5}, {2, 3, 5, 6}, {2, 3, 4, 6}},          // a shared by every batch
      {{1, 4, 5}, {3, 5, 6}, {3, 4, 6}},             // a broadcast from a batch of one
      {{2, 3, 4, 5}, {5, 6}, {2, 3, 4, 6}},          // b shared: one tall product
      {{3, 4, 5}, {1, 5, 6}, {3, 4, 6}},             // b a batch of one: tall too
      {{2, 3, 1, 5}, {2, 1, 5, 7}, {2, 3, 1, 7}},    // m = 1, strided rows
      {{3, 1, 4, 5}, {1, 2, 5, 6}, {3, 2, 4, 6}},    // outer and inner broadcast
  };
  uint32_t seed = 1;
  for (const auto &s : shapes) {
    KernelCase c = f32Matmul(s[0], s[1], s[2]);
    c.seed = seed++;
    compareWithCpu(c);
  }
}

// trans_lhs / trans_rhs (shardc-fold-transposes): stored shapes, the operand's last two
// dimensions swapped; a tall product (b shared, a untransposed), strided batches and
// broadcast batches.
TEST(CudaMatmul, TransposedOperandsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  struct Case {
    std::vector<int64_t> a, b, y; // stored shapes
    bool transA, transB;
  };
  const std::vector<Case> cases = {
      {{33, 17}, {33, 65}, {17, 65}, true, false},          // [k,m] x [k,n]
      {{17, 33}, {65, 33}, {17, 65}, false, true},          // [m,k] x [n,k]
      {{33, 17}, {65, 33}, {17, 65}, true, true},
      {{2, 3, 4, 5}, {6, 5}, {2, 3, 4, 6}, false, true},    // tall, b transposed
      {{2, 3, 5, 4}, {5, 6}, {2, 3, 4, 6}, true, false},    // a transposed: per batch
      {{3, 7, 5}, {3, 9, 7}, {3, 5, 9}, true, true},        // strided batch
      {{2, 1, 5, 4}, {3, 6, 5}, {2, 3, 4, 6}, true, true},  // broadcast batches
  };
  uint32_t seed = 40;
  for (const Case &t : cases) {
    KernelCase c = f32Matmul(t.a, t.b, t.y);
    c.attrs.i("trans_lhs", t.transA).i("trans_rhs", t.transB);
    c.seed = seed++;
    compareWithCpu(c);
  }
}

TEST(CudaMatmul, VectorOperandsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  compareWithCpu(f32Matmul({5}, {5, 6}, {6}));
  compareWithCpu(f32Matmul({4, 5}, {5}, {4}));
  compareWithCpu(f32Matmul({33}, {33}, {}));
  compareWithCpu(f32Matmul({2, 3, 4, 5}, {5}, {2, 3, 4}));
  compareWithCpu(f32Matmul({5}, {2, 5, 3}, {2, 3}));
}

TEST(CudaMatmul, EmptyInnerDimensionGivesZerosAndEmptyOutputsAreFine) {
  SHARDC_REQUIRE_CUDA();
  for (DType y : {F32, BF16})
    compareWithCpu(matmulCase(F32, {3, 0}, F32, {0, 4}, y, {3, 4}));
  compareWithCpu(f32Matmul({0, 5}, {5, 4}, {0, 4}));
  compareWithCpu(f32Matmul({2, 0, 3, 5}, {5, 4}, {2, 0, 3, 4}));
}

TEST(CudaMatmul, SixteenBitOperandsAndResultsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  // Same-dtype operands go to cuBLASLt as they are; mixed ones are widened in the workspace; a
  // result cuBLASLt cannot write from them is computed in f32 and rounded. Tall, batched and
  // broadcast products each, so every path meets every dtype combination.
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{17, 33}, {33, 65}, {17, 65}},
      {{3, 5, 7}, {3, 7, 9}, {3, 5, 9}},
      {{2, 1, 4, 5}, {3, 5, 6}, {2, 3, 4, 6}},
  };
  uint32_t seed = 1;
  for (DType a : {F32, BF16, F16})
    for (DType b : {F32, BF16, F16})
      for (DType y : {F32, BF16, F16}) {
        if (a == F32 && b == F32 && y == F32)
          continue; // the f32 tests above
        for (const auto &s : shapes) {
          KernelCase c = matmulCase(a, s[0], b, s[1], y, s[2]);
          c.seed = seed++;
          compareWithCpu(c);
        }
      }
}

// ---- gemm ------------------------------------------------------------------------------------

KernelCase gemmCase(DType ab, DType y, int64_t m, int64_t k, int64_t n, bool transA, bool transB,
                    float alpha, float beta, const std::vector<int64_t> *cShape) {
  KernelCase c{"gemm",
               {typed(ab, transA ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k},
                      fillFor(ab)),
                typed(ab, transB ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n},
                      fillFor(ab))},
               {typed(y, {m, n})}};
  if (cShape)
    c.inputs.push_back(f32(*cShape));
  c.attrs.f("alpha", alpha).f("beta", beta).i("trans_a", transA).i("trans_b", transB);
  c.tolerance = y == F32 ? 1e-5 : 1e-2;
  return c;
}

TEST(CudaGemm, TransposesAlphaBetaAndEveryBroadcastOfCMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  const int64_t m = 17, k = 33, n = 65;
  const std::vector<std::vector<int64_t>> cShapes = {{}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}};
  uint32_t seed = 1;
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      KernelCase noC = gemmCase(F32, F32, m, k, n, transA, transB, 0.75f, 2.0f, nullptr);
      noC.seed = seed++;
      compareWithCpu(noC);
      for (const auto &cShape : cShapes) {
        KernelCase c = gemmCase(F32, F32, m, k, n, transA, transB, 1.5f, -0.5f, &cShape);
        c.seed = seed++;
        compareWithCpu(c);
      }
    }
  // c given but beta 0 (c is not read), and alpha 0 (only beta*c).
  const std::vector<int64_t> full = {m, n};
  compareWithCpu(gemmCase(F32, F32, m, k, n, false, true, 1.0f, 0.0f, &full));
  compareWithCpu(gemmCase(F32, F32, m, k, n, true, false, 0.0f, 0.25f, &full));
  // The odd shapes of matmul, through gemm.
  const std::vector<int64_t> one = {1, 1};
  compareWithCpu(gemmCase(F32, F32, 1, 1, 1, false, false, 1.0f, 1.0f, &one));
  compareWithCpu(gemmCase(F32, F32, 129, 7, 257, true, true, 1.0f, 1.0f, nullptr));
}

TEST(CudaGemm, EmptyInnerDimensionGivesBetaTimesC) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<int64_t> row = {5};
  compareWithCpu(gemmCase(F32, F32, 4, 0, 5, false, false, 1.0f, 0.5f, &row));
  compareWithCpu(gemmCase(F32, F32, 4, 0, 5, true, true, 1.0f, 0.5f, nullptr));
}

TEST(CudaGemm, SixteenBitOperandsAndResultsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<int64_t> row = {65};
  uint32_t seed = 1;
  for (DType ab : {BF16, F16})
    for (DType y : {F32, BF16, F16})
      for (bool withC : {false, true}) {
        KernelCase c = gemmCase(ab, y, 17, 33, 65, true, false, 1.25f, 0.5f, withC ? &row : nullptr);
        c.seed = seed++;
        compareWithCpu(c);
      }
  // Mixed operand dtypes (a f32, b bf16), transposed b.
  KernelCase mixed = gemmCase(F32, F32, 17, 33, 65, false, true, 1.0f, 1.0f, &row);
  mixed.inputs[1].dtype = BF16;
  compareWithCpu(mixed);
}

// ---- errors (no GPU needed: the checks run before any device work) -----------------------------

// Runs `kernel` on both devices with type-only operands (never read: the checks fail first) and
// expects one message naming `expected`. The CUDA workspace function checks the whole contract
// and fails with the same message (the CPU gemm's checks only dtypes, so it is not asked).
void expectSameError(const std::string &kernel, std::vector<Tensor> inputs, Tensor output,
                     const Attrs &attrs, const std::string &expected) {
  std::string messages[2];
  const DeviceKind devices[2] = {DeviceKind::Cpu, DeviceKind::Cuda};
  for (int d = 0; d < 2; ++d) {
    KernelArgs args;
    args.inputs = inputs;
    args.outputs = {output};
    args.attrs = &attrs.map();
    KernelFn fn = findKernel(devices[d], kernel);
    ASSERT_NE(fn, nullptr) << kernel;
    const Status status = fn(args);
    ASSERT_FALSE(status.isOk()) << kernel;
    messages[d] = status.message();
    if (devices[d] == DeviceKind::Cuda) {
      uint64_t bytes = 0;
      const Status sized = kernelWorkspaceBytes(devices[d], kernel, args, &bytes);
      ASSERT_FALSE(sized.isOk()) << kernel;
      EXPECT_EQ(sized.message(), status.message());
    }
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[1].find(expected), std::string::npos) << messages[1];
}

TEST(CudaMatmul, MismatchedInnerDimsFailWithTheCpuMessage) {
  Attrs none;
  expectSameError("matmul", {typeOnlyTensor(F32, {2, 3}), typeOnlyTensor(F32, {4, 5})},
                  typeOnlyTensor(F32, {2, 5}), none, "matmul: inner dimensions differ");
  expectSameError("matmul", {typeOnlyTensor(BF16, {2, 3, 4}), typeOnlyTensor(BF16, {3, 4, 5})},
                  typeOnlyTensor(F32, {2, 3, 5}), none, "matmul: batch dims");
  Attrs attrs;
  attrs.f("alpha", 1).f("beta", 1).i("trans_a", 1).i("trans_b", 0);
  expectSameError("gemm", {typeOnlyTensor(F32, {2, 3}), typeOnlyTensor(F32, {4, 5})},
                  typeOnlyTensor(F32, {3, 5}), attrs, "gemm: inner dimensions differ");
}

} // namespace
} // namespace shardc::runtime::testing
