// matmul and gemm against naive triple loops in double.
#include "tests/unit/kernels/test_support.h"

namespace shardc::runtime::testing {
namespace {

// NumPy matmul written out: 1-D promotion, broadcast batch dims.
std::vector<float> referenceMatmul(const std::vector<float> &a, std::vector<int64_t> aShape,
                                   const std::vector<float> &b, std::vector<int64_t> bShape,
                                   const std::vector<int64_t> &yShape) {
  if (aShape.size() == 1)
    aShape.insert(aShape.begin(), 1);
  if (bShape.size() == 1)
    bShape.push_back(1);
  const int64_t m = aShape[aShape.size() - 2], k = aShape.back(), n = bShape.back();
  const std::vector<int64_t> aBatch(aShape.begin(), aShape.end() - 2);
  const std::vector<int64_t> bBatch(bShape.begin(), bShape.end() - 2);
  const std::vector<int64_t> batch(yShape.begin(),
                                   yShape.begin() + std::max(aBatch.size(), bBatch.size()));
  std::vector<float> y;
  for (int64_t bi = 0; bi < numelOf(batch); ++bi) {
    const std::vector<int64_t> index = unravel(bi, batch);
    const int64_t aMat = broadcastSource(index, aBatch), bMat = broadcastSource(index, bBatch);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += double(a[(aMat * m + i) * k + p]) * double(b[(bMat * k + p) * n + j]);
        y.push_back(static_cast<float>(acc));
      }
  }
  return y;
}

TEST(Matmul, ShapesPromotionAndBatchBroadcast) {
  struct Case {
    std::vector<int64_t> a, b, y;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{4}, {4, 5}, {5}},
      {{3, 4}, {4}, {3}},
      {{4}, {4}, {}},
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}},       // shared b: one tall sgemm
      {{2, 2, 3, 4}, {4, 5}, {2, 2, 3, 5}}, // shared b, two batch dims
      {{3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{1, 3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{2, 1, 3, 4}, {3, 4, 5}, {2, 3, 3, 5}},
      {{4}, {2, 4, 5}, {2, 5}},
      {{2, 3, 4}, {4}, {2, 3}},
      {{1, 1, 3, 4}, {1, 4, 5}, {1, 1, 3, 5}},
      {{0, 4}, {4, 5}, {0, 5}},
      {{2, 0, 3, 4}, {4, 5}, {2, 0, 3, 5}},
      {{3, 0}, {0, 5}, {3, 5}}, // K = 0: all zeros
      {{33, 65}, {65, 17}, {33, 17}},
  };
  unsigned seed = 21;
  for (const Case &c : cases) {
    SCOPED_TRACE("case " + std::to_string(seed));
    const auto va = randomFloats(numelOf(c.a), -1, 1, seed++);
    const auto vb = randomFloats(numelOf(c.b), -1, 1, seed++);
    HostTensor a = HostTensor::of<float>(c.a, va), b = HostTensor::of<float>(c.b, vb);
    HostTensor y(program::F32, c.y);
    ASSERT_KERNEL_OK(runKernel("matmul", {a, b}, {y}));
    expectValuesNear(y.values<float>(), referenceMatmul(va, c.a, vb, c.b, c.y), 1e-5);
  }
}

TEST(Gemm, TransposesAlphaBetaAndBiasBroadcast) {
  const int64_t m = 3, n = 4, k = 5;
  struct Case {
    int64_t transA, transB;
    float alpha, beta;
    std::vector<int64_t> c; // empty-marker handled by hasC
    bool hasC;
  };
  const std::vector<Case> cases = {
      {0, 0, 1.0f, 1.0f, {m, n}, true},  {1, 0, 0.5f, 2.0f, {n}, true},
      {0, 1, 2.0f, -1.0f, {m, 1}, true}, {1, 1, 1.0f, 0.5f, {}, true},
      {0, 0, 1.5f, 0.0f, {m, n}, true},  {1, 1, -1.0f, 1.0f, {}, false},
      {0, 0, 1.0f, 1.0f, {1, n}, true},
  };
  unsigned seed = 40;
  for (const Case &g : cases) {
    SCOPED_TRACE("case " + std::to_string(seed));
    const std::vector<int64_t> aShape =
        g.transA ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
    const std::vector<int64_t> bShape =
        g.transB ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
    const auto va = randomFloats(m * k, -1, 1, seed++);
    const auto vb = randomFloats(k * n, -1, 1, seed++);
    const auto vc = randomFloats(numelOf(g.c), -1, 1, seed++);
    HostTensor a = HostTensor::of<float>(aShape, va), b = HostTensor::of<float>(bShape, vb);
    HostTensor c = HostTensor::of<float>(g.c, vc);
    HostTensor y(program::F32, {m, n});
    Attrs attrs;
    attrs.f("alpha", g.alpha).f("beta", g.beta).i("trans_a", g.transA).i("trans_b", g.transB);
    ASSERT_KERNEL_OK(runKernel("gemm", {a, b, g.hasC ? c.view() : absent()}, {y}, attrs));
    std::vector<float> expected;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          const float av = g.transA ? va[p * m + i] : va[i * k + p];
          const float bv = g.transB ? vb[j * k + p] : vb[p * n + j];
          acc += double(av) * double(bv);
        }
        double result = g.alpha * acc;
        if (g.hasC)
          result += g.beta * double(vc[broadcastSource({i, j}, g.c)]);
        expected.push_back(static_cast<float>(result));
      }
    expectValuesNear(y.values<float>(), expected, 1e-5);
  }
}

TEST(Gemm, EmptyInnerDimensionGivesBetaTimesC) {
  HostTensor a(program::F32, {2, 0}), b(program::F32, {0, 3});
  HostTensor c = HostTensor::of<float>({3}, {1.0f, 2.0f, 3.0f});
  HostTensor y(program::F32, {2, 3});
  Attrs attrs;
  attrs.f("alpha", 1.0f).f("beta", 2.0f).i("trans_a", 0).i("trans_b", 0);
  ASSERT_KERNEL_OK(runKernel("gemm", {a, b, c}, {y}, attrs));
  expectValuesNear(y.values<float>(), {2, 4, 6, 2, 4, 6});
  ASSERT_KERNEL_OK(runKernel("gemm", {a, b}, {y}, attrs));
  expectValuesNear(y.values<float>(), {0, 0, 0, 0, 0, 0});
}

// `values` stored as `dtype` (f32, or rounded to bf16/f16 by the cast kernel).
HostTensor stored(const std::vector<int64_t> &shape, const std::vector<float> &values,
                  DType dtype) {
  HostTensor f32 = HostTensor::of<float>(shape, values);
  if (dtype == program::F32)
    return f32;
  HostTensor half(dtype, shape);
  EXPECT_KERNEL_OK(runKernel("cast", {f32}, {half}, Attrs().i("to", dtype)));
  return half;
}

// A tensor's values as f32 (exact for the 16-bit floats).
std::vector<float> asF32(const HostTensor &t) {
  if (t.view().dtype == program::F32)
    return t.values<float>();
  HostTensor f32(program::F32, t.view().shape);
  EXPECT_KERNEL_OK(runKernel("cast", {t}, {f32}, Attrs().i("to", program::F32)));
  return f32.values<float>();
}

// The bytes of a tensor's elements.
std::vector<uint8_t> bytesOf(const HostTensor &t) {
  const auto *p = static_cast<const uint8_t *>(t.view().data);
  return std::vector<uint8_t>(p, p + t.view().sizeBytes());
}

// With bf16 or f16 operands and results, a product is defined as the f32 product of the operands'
// (exact) f32 values, rounded to the result's type: bit for bit what the f32 kernel and the cast
// kernel give, which is what lets the compiler fold cast pairs into the products.
TEST(MatmulGemm, SixteenBitOperandsAndResultsMatchTheF32ProductRounded) {
  struct Shapes {
    std::vector<int64_t> a, b, y;
  };
  const std::vector<Shapes> shapes = {
      {{33, 65}, {65, 17}, {33, 17}}, {{2, 3, 4}, {4, 5}, {2, 3, 5}},
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}}, {{4}, {4, 5}, {5}}, {{0, 4}, {4, 5}, {0, 5}}};
  unsigned seed = 70;
  for (DType half : {program::BF16, program::F16})
    for (const Shapes &c : shapes)
      for (int which = 1; which < 8; ++which) { // bit 0: a is 16-bit, bit 1: b, bit 2: y
        SCOPED_TRACE(std::string(dtypeName(half)) + " case " + std::to_string(seed) +
                     " mask " + std::to_string(which));
        const DType da = which & 1 ? half : program::F32, db = which & 2 ? half : program::F32;
        const DType dy = which & 4 ? half : program::F32;
        HostTensor a = stored(c.a, randomFloats(numelOf(c.a), -2, 2, seed++), da);
        HostTensor b = stored(c.b, randomFloats(numelOf(c.b), -2, 2, seed++), db);
        HostTensor a32 = HostTensor::of<float>(c.a, asF32(a));
        HostTensor b32 = HostTensor::of<float>(c.b, asF32(b));
        HostTensor product(program::F32, c.y);
        ASSERT_KERNEL_OK(runKernel("matmul", {a32, b32}, {product}));
        HostTensor expected = stored(c.y, product.values<float>(), dy);
        HostTensor y(dy, c.y);
        ASSERT_KERNEL_OK(runKernel("matmul", {a, b}, {y}));
        EXPECT_EQ(bytesOf(y), bytesOf(expected));
        if (HasFailure())
          return;

        // gemm: transposed operands, alpha, and an f32 bias added before the rounding.
        if (c.a.size() != 2 || c.b.size() != 2 || c.y[0] == 0)
          continue;
        const int64_t m = c.a[0], k = c.a[1], n = c.b[1];
        HostTensor at = stored({k, m}, randomFloats(k * m, -2, 2, seed++), da);
        HostTensor at32 = HostTensor::of<float>({k, m}, asF32(at));
        HostTensor bias = HostTensor::of<float>({n}, randomFloats(n, -1, 1, seed++));
        Attrs attrs;
        attrs.f("alpha", 0.5f).f("beta", 2.0f).i("trans_a", 1).i("trans_b", 0);
        HostTensor gemm32(program::F32, {m, n});
        ASSERT_KERNEL_OK(runKernel("gemm", {at32, b32, bias}, {gemm32}, attrs));
        HostTensor gemmExpected = stored({m, n}, gemm32.values<float>(), dy);
        HostTensor gemmY(dy, {m, n});
        ASSERT_KERNEL_OK(runKernel("gemm", {at, b, bias}, {gemmY}, attrs));
        EXPECT_EQ(bytesOf(gemmY), bytesOf(gemmExpected));
      }
}

// The values of `shape` (rank >= 2) stored with the last two dimensions swapped, and that
// stored shape: what a matmul with trans_lhs / trans_rhs reads.
std::pair<std::vector<float>, std::vector<int64_t>>
swapLastTwo(const std::vector<float> &v, const std::vector<int64_t> &shape) {
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  std::vector<int64_t> swapped = shape;
  std::swap(swapped[swapped.size() - 2], swapped[swapped.size() - 1]);
  std::vector<float> out(v.size());
  for (int64_t mat = 0; mat * rows * cols < static_cast<int64_t>(v.size()); ++mat)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        out[mat * rows * cols + j * rows + i] = v[mat * rows * cols + i * cols + j];
  return {out, swapped};
}

// trans_lhs / trans_rhs (set by shardc-fold-transposes): the operand is stored transposed and
// the product is that of the logical operands, on every path: one tall product (only b may be
// transposed there), per-batch products, broadcast batches, 16-bit staging.
TEST(Matmul, TransposedOperandsGiveTheProductOfTheLogicalOperands) {
  struct Case {
    std::vector<int64_t> a, b, y; // logical shapes
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 5}, {3, 5}},          {{2, 3, 4}, {4, 5}, {2, 3, 5}},
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}}, {{2, 1, 3, 4}, {3, 4, 5}, {2, 3, 3, 5}},
      {{4}, {4, 5}, {5}},                {{3, 4}, {4}, {3}},
      {{33, 65}, {65, 17}, {33, 17}},    {{3, 0}, {0, 5}, {3, 5}},
      {{8, 64}, {64, 64}, {8, 64}},      {{128, 96}, {96, 112}, {128, 112}}, // small; large
  };
  unsigned seed = 300;
  for (const Case &c : cases)
    for (int flags = 0; flags < 4; ++flags) {
      const bool transA = flags & 1, transB = flags & 2;
      if ((transA && c.a.size() < 2) || (transB && c.b.size() < 2))
        continue;
      for (DType dtype : {program::F32, program::BF16}) {
        SCOPED_TRACE("case " + std::to_string(seed) + " trans_lhs " + std::to_string(transA) +
                     " trans_rhs " + std::to_string(transB) + " " + dtypeName(dtype));
        HostTensor la = stored(c.a, randomFloats(numelOf(c.a), -1, 1, seed++), dtype);
        HostTensor lb = stored(c.b, randomFloats(numelOf(c.b), -1, 1, seed++), dtype);
        const std::vector<float> va = asF32(la), vb = asF32(lb);
        auto [sa, shapeA] = transA ? swapLastTwo(va, c.a) : std::make_pair(va, c.a);
        auto [sb, shapeB] = transB ? swapLastTwo(vb, c.b) : std::make_pair(vb, c.b);
        HostTensor a = stored(shapeA, sa, dtype), b = stored(shapeB, sb, dtype);
        HostTensor y(program::F32, c.y);
        Attrs attrs;
        attrs.i("trans_lhs", transA).i("trans_rhs", transB);
        ASSERT_KERNEL_OK(runKernel("matmul", {a, b}, {y}, attrs));
        expectValuesNear(y.values<float>(), referenceMatmul(va, c.a, vb, c.b, c.y), 1e-5);
        // The bits are those of the product of the operands stored untransposed (blas.cpp):
        // folding a transpose into a product never changes a result.
        HostTensor plain(program::F32, c.y);
        ASSERT_KERNEL_OK(runKernel("matmul", {la, lb}, {plain}));
        EXPECT_EQ(bytesOf(y), bytesOf(plain));
        if (HasFailure())
          return;
      }
    }
  HostTensor v4(program::F32, {4}), b45(program::F32, {4, 5}), y5(program::F32, {5});
  EXPECT_KERNEL_ERROR(runKernel("matmul", {v4, b45}, {y5}, Attrs().i("trans_lhs", 1)),
                      "a transposed operand must have rank >= 2");
  HostTensor a34(program::F32, {3, 4}), y35(program::F32, {3, 5});
  EXPECT_KERNEL_ERROR(runKernel("matmul", {a34, b45}, {y35}, Attrs().i("trans_rhs", 1)),
                      "inner dimensions differ");
}

TEST(MatmulGemm, InconsistentOperandsAreErrors) {
  HostTensor a34(program::F32, {3, 4}), b45(program::F32, {4, 5}), b35(program::F32, {3, 5});
  HostTensor y35(program::F32, {3, 5}), y53(program::F32, {5, 3}), i34(program::I32, {3, 4});
  HostTensor s(program::F32, {}), a234(program::F32, {2, 3, 4}), b345(program::F32, {3, 4, 5});
  EXPECT_KERNEL_ERROR(runKernel("matmul", {a34, b35}, {y35}), "inner dimensions differ");
  EXPECT_KERNEL_ERROR(runKernel("matmul", {a34, b45}, {y53}), "expected [3x5]");
  EXPECT_KERNEL_ERROR(runKernel("matmul", {i34, b45}, {y35}),
                      "a i32[3x4] must be f32, bf16 or f16");
  EXPECT_KERNEL_ERROR(runKernel("matmul", {s, b45}, {y35}), "rank >= 1");
  EXPECT_KERNEL_ERROR(runKernel("matmul", {a234, b345}, {HostTensor(program::F32, {3, 3, 5})}),
                      "batch dims");
  Attrs attrs;
  attrs.f("alpha", 1.0f).f("beta", 1.0f).i("trans_a", 0).i("trans_b", 0);
  EXPECT_KERNEL_ERROR(runKernel("gemm", {a34, b35}, {y35}, attrs), "inner dimensions differ");
  EXPECT_KERNEL_ERROR(runKernel("gemm", {a234, b45}, {y35}, attrs), "must be 2-D");
  EXPECT_KERNEL_ERROR(runKernel("gemm", {a34, b45, HostTensor(program::F32, {4})}, {y35}, attrs),
                      "cannot be broadcast to [3x5]");
  EXPECT_KERNEL_ERROR(runKernel("gemm", {a34, b45}, {y53}, attrs), "expected [3x5]");
  EXPECT_KERNEL_ERROR(runKernel("gemm", {a34, b45}, {y35}, Attrs().f("alpha", 1.0f)),
                      "missing attribute 'beta'");
  Attrs intAlpha;
  intAlpha.i("alpha", 1).f("beta", 1.0f).i("trans_a", 0).i("trans_b", 0);
  EXPECT_KERNEL_ERROR(runKernel("gemm", {a34, b45}, {y35}, intAlpha),
                      "attribute 'alpha' is not a float");
}

} // namespace
} // namespace shardc::runtime::testing
