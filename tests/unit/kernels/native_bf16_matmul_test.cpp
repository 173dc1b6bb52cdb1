// matmul and gemm on the native bf16 path (cpu/onednn_matmul.h) against the products of the
// operands' exact values summed in double: oneDNN sums the same exact products in its own
// order, so each f32 element is within f32 rounding of a K-term sum, and a bf16 result within
// one bf16 rounding of that. On a CPU without AVX512-BF16 or AMX the run cannot choose the path
// (checked below) and the tests force it: oneDNN then emulates the instructions, which computes
// the same sums, so the path's strides, bands, batches and roundings are checked on every CPU.
#include "runtime/kernels/cpu/onednn_matmul.h"
#include "tests/unit/kernels/test_support.h"

#include <cmath>
#include <thread>

namespace shardc::runtime::testing {
namespace {

using program::BF16;
using program::F32;

// Turns the native path on for a test (forced where the CPU lacks it) and back off after it.
struct NativeProducts {
  NativeProducts() { cpu::forceNativeBf16ProductsForTesting(true); }
  ~NativeProducts() {
    cpu::forceNativeBf16ProductsForTesting(false);
    setCpuKernelThreads(std::max(1u, std::thread::hardware_concurrency()));
  }
};

HostTensor bf16Tensor(const std::vector<int64_t> &shape, const std::vector<float> &values) {
  HostTensor f32 = HostTensor::of<float>(shape, values);
  HostTensor half(BF16, shape);
  EXPECT_KERNEL_OK(runKernel("cast", {f32}, {half}, Attrs().i("to", BF16)));
  return half;
}

std::vector<float> valuesOf(const HostTensor &t) {
  if (t.view().dtype == F32)
    return t.values<float>();
  HostTensor f32(F32, t.view().shape);
  EXPECT_KERNEL_OK(runKernel("cast", {t}, {f32}, Attrs().i("to", F32)));
  return f32.values<float>();
}

std::vector<uint8_t> bytesOf(const HostTensor &t) {
  const auto *p = static_cast<const uint8_t *>(t.view().data);
  return std::vector<uint8_t>(p, p + t.view().sizeBytes());
}

// y = alpha * op(a) * op(b) + beta * c for row-major a [m,k] (or [k,m] transposed) and b [k,n]
// (or [n,k]): each element's exact value (in double) and the sum of its terms' magnitudes.
struct Reference {
  std::vector<double> value, magnitude;
};
Reference reference(const std::vector<float> &a, const std::vector<float> &b, int64_t m,
                    int64_t n, int64_t k, bool transA, bool transB, double alpha = 1,
                    double beta = 0, const std::vector<float> &c = {}) {
  Reference r;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, size = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = a[transA ? p * m + i : i * k + p], w = b[transB ? j * k + p : p * n + j];
        sum += x * w;
        size += std::fabs(x * w);
      }
      const double bias = c.empty() ? 0.0 : beta * c[j];
      r.value.push_back(alpha * sum + bias);
      r.magnitude.push_back(std::fabs(alpha) * size + std::fabs(bias));
    }
  return r;
}

// Each element within f32 rounding of its sum (K roundings of at most 2^-24 of the running
// magnitude), plus one bf16 rounding (2^-8 relative) for a bf16 result.
void expectWithinRounding(const std::vector<float> &y, const Reference &r, int64_t k, bool bf16) {
  ASSERT_EQ(y.size(), r.value.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double sumError = static_cast<double>(k + 2) * std::ldexp(r.magnitude[i], -24);
    const double bound = sumError + (bf16 ? std::ldexp(std::fabs(r.value[i]) + sumError, -8) : 0);
    ASSERT_LE(std::fabs(y[i] - r.value[i]), bound)
        << "element " << i << ": " << y[i] << " against " << r.value[i];
  }
}

TEST(NativeBf16Matmul, ProductsWithinRoundingOfTheExactSumsOnEveryLayout) {
  NativeProducts native;
  struct Case {
    int64_t m, n, k;
  };
  // Small ones (one call), and ones of over 2^22 multiply-adds, which two threads split into
  // bands of rows (m >= n) or of columns.
  const std::vector<Case> cases = {{3, 5, 4}, {33, 17, 65}, {512, 96, 192}, {40, 1024, 160}};
  unsigned seed = 900;
  for (const Case &c : cases)
    for (int flags = 0; flags < 4; ++flags)
      for (DType result : {F32, BF16}) {
        const bool transA = flags & 1, transB = flags & 2;
        SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                     std::to_string(c.k) + " trans_lhs " + std::to_string(transA) +
                     " trans_rhs " + std::to_string(transB) + " " + dtypeName(result));
        HostTensor a = bf16Tensor(transA ? std::vector<int64_t>{c.k, c.m}
                                         : std::vector<int64_t>{c.m, c.k},
                                  randomFloats(c.m * c.k, -1, 1, seed++));
        HostTensor b = bf16Tensor(transB ? std::vector<int64_t>{c.n, c.k}
                                         : std::vector<int64_t>{c.k, c.n},
                                  randomFloats(c.k * c.n, -1, 1, seed++));
        const Reference r = reference(valuesOf(a), valuesOf(b), c.m, c.n, c.k, transA, transB);
        HostTensor y(result, {c.m, c.n});
        ASSERT_KERNEL_OK(runKernel("matmul", {a, b}, {y},
                                   Attrs().i("trans_lhs", transA).i("trans_rhs", transB)));
        expectWithinRounding(valuesOf(y), r, c.k, result == BF16);

        // gemm: alpha, beta and a bias row, into the f32 result or rounded to bf16.
        HostTensor bias = HostTensor::of<float>({c.n}, randomFloats(c.n, -1, 1, seed++));
        HostTensor g(result, {c.m, c.n});
        ASSERT_KERNEL_OK(runKernel(
            "gemm", {a, b, bias}, {g},
            Attrs().f("alpha", 0.5f).f("beta", 2.0f).i("trans_a", transA).i("trans_b", transB)));
        expectWithinRounding(valuesOf(g),
                             reference(valuesOf(a), valuesOf(b), c.m, c.n, c.k, transA, transB,
                                       0.5, 2.0, bias.values<float>()),
                             c.k, result == BF16);
        if (HasFailure())
          return;
      }
}

TEST(NativeBf16Matmul, BatchesAndBroadcastBatches) {
  NativeProducts native;
  struct Case {
    std::vector<int64_t> a, b, y;
  };
  const std::vector<Case> cases = {{{2, 3, 8, 16}, {2, 3, 16, 8}, {2, 3, 8, 8}},
                                   {{2, 1, 5, 7}, {3, 7, 4}, {2, 3, 5, 4}},
                                   {{4, 9, 12}, {12, 6}, {4, 9, 6}}};
  unsigned seed = 950;
  for (const Case &c : cases)
    for (DType result : {F32, BF16}) {
      HostTensor a = bf16Tensor(c.a, randomFloats(numelOf(c.a), -1, 1, seed++));
      HostTensor b = bf16Tensor(c.b, randomFloats(numelOf(c.b), -1, 1, seed++));
      HostTensor y(result, c.y);
      ASSERT_KERNEL_OK(runKernel("matmul", {a, b}, {y}));
      // The exact path's product of the same values, compared within rounding per matrix.
      HostTensor exact(F32, c.y);
      cpu::forceNativeBf16ProductsForTesting(false);
      ASSERT_KERNEL_OK(runKernel("matmul", {HostTensor::of<float>(c.a, valuesOf(a)),
                                            HostTensor::of<float>(c.b, valuesOf(b))},
                                 {exact}));
      cpu::forceNativeBf16ProductsForTesting(true);
      const int64_t k = c.a.back();
      const std::vector<float> got = valuesOf(y), want = exact.values<float>();
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], k * std::ldexp(1.0, -22) + (result == BF16 ? 
                    std::ldexp(std::fabs(want[i]), -8) : 0.0))
            << dtypeName(result) << " element " << i;
    }
}

// Bands computed on their own threads give the bits of the whole product on one thread.
TEST(NativeBf16Matmul, TheThreadCountChangesNoBit) {
  NativeProducts native;
  for (bool transB : {false, true}) {
    HostTensor a = bf16Tensor({600, 256}, randomFloats(600 * 256, -1, 1, 990));
    HostTensor b = bf16Tensor(transB ? std::vector<int64_t>{200, 256} : std::vector<int64_t>{256, 200},
                              randomFloats(256 * 200, -1, 1, 991));
    HostTensor one(F32, {600, 200}), two(F32, {600, 200});
    setCpuKernelThreads(1);
    ASSERT_KERNEL_OK(runKernel("matmul", {a, b}, {one}, Attrs().i("trans_rhs", transB)));
    setCpuKernelThreads(2);
    ASSERT_KERNEL_OK(runKernel("matmul", {a, b}, {two}, Attrs().i("trans_rhs", transB)));
    EXPECT_EQ(bytesOf(one), bytesOf(two)) << "trans_rhs " << transB;
  }
}

// The run may choose the path only where the CPU has it; elsewhere it is refused, naming what
// oneDNN found.
TEST(NativeBf16Matmul, ChosenOnlyWhereTheCpuHasIt) {
  if (cpuHasNativeBf16Products()) {
    ASSERT_KERNEL_OK(setCpuBf16Products(Bf16Products::Native));
    EXPECT_TRUE(cpu::nativeBf16ProductsEnabled());
  } else {
    EXPECT_KERNEL_ERROR(setCpuBf16Products(Bf16Products::Native),
                        "native bf16 products need a CPU with AVX512-BF16 or AMX; oneDNN runs "
                        "this one as " + cpu::onednnCpuIsa());
    EXPECT_FALSE(cpu::nativeBf16ProductsEnabled());
  }
  ASSERT_KERNEL_OK(setCpuBf16Products(Bf16Products::Exact));
  EXPECT_FALSE(cpu::nativeBf16ProductsEnabled());
}

} // namespace
} // namespace shardc::runtime::testing
