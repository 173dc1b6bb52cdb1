// sgemm over the kernel pool (blas.h).
//
// The bits of a product must depend on its values only, not on how its operands are stored
// (shardc-fold-transposes decides that per program, and a strategy's program may fold where
// the single-rank one does not) nor on the thread count:
//   - A product of more than 100^3 multiply-adds runs through OpenBLAS's packed level-3
//     driver whatever the transpositions: the operands are packed into the same panels and
//     every element of C is summed over K in an order set by K alone (the K blocking and the
//     micro-kernel's loop). A band of rows or columns computed by its own call therefore gets
//     the bits the whole call gives it, as long as the band is large too (each band here is
//     at least 2^21 multiply-adds).
//   - Up to 100^3, OpenBLAS (0.3.21, AVX-512 cores) runs small-matrix kernels that exist per
//     transposition and sum in their own orders. Such a product's transposed operands are
//     first copied into their untransposed layout, so it always runs as the same
//     untransposed call: the copies cost O(MK + KN) against the product's O(MNK).
// vector_threads_test.cpp and matmul_test.cpp check both bit for bit.
#include "runtime/kernels/cpu/blas.h"

#include "runtime/kernels/cpu/kernel_threads.h"

#include <cblas.h>

#include <algorithm>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

// The multiply-adds of one band at least: a second thread is worth its wake-up (a few
// microseconds; a 2-core machine does about 50 multiply-adds per nanosecond), and each band
// stays above the small-matrix bound.
constexpr double kMultiplyAddsPerThread = 1 << 21;
// OpenBLAS's bound for its small-matrix kernels (sgemm_small_kernel_permit).
constexpr double kSmallProduct = 100.0 * 100.0 * 100.0;
// Bands are whole multiples of this many rows or columns (the micro-kernels' widest tile),
// so no band but the last has a ragged edge.
constexpr int64_t kBand = 16;

void call(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *y, int64_t ldy) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, y, static_cast<int>(ldy));
}

// The [cols, rows] row-major matrix `in` transposed into `out` ([rows, cols]).
void transposeInto(const float *in, int64_t rows, int64_t cols, float *out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = in[c * rows + r];
}

} // namespace

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
           const float *b, float beta, float *y) {
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (m > 0 && n > 0 && k > 0 && alpha != 0.0f && work <= kSmallProduct && (transA || transB)) {
    thread_local std::vector<float> untransposed;
    untransposed.resize(static_cast<size_t>((transA ? m * k : 0) + (transB ? k * n : 0)));
    float *next = untransposed.data();
    if (transA) {
      transposeInto(a, m, k, next);
      a = next;
      next += m * k;
      transA = false;
    }
    if (transB) {
      transposeInto(b, k, n, next);
      b = next;
      transB = false;
    }
  }
  sgemmStrided(transA, transB, m, n, k, alpha, a, transA ? m : k, b, transB ? k : n, beta, y, n);
}

void sgemmStrided(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *y,
                  int64_t ldy) {
  if (m == 0 || n == 0)
    return;
  if (k == 0 || alpha == 0.0f) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        y[i * ldy + j] = beta == 0.0f ? 0.0f : beta * y[i * ldy + j];
    return;
  }
  // OpenBLAS starts with a thread per core; its calls here run on the caller's thread only
  // (setCpuKernelThreads says so too, for a process that sets the count).
  static const bool singleThreaded = (openblas_set_num_threads(1), true);
  (void)singleThreaded;
  forEachGemmBand(m, n, k, [&](bool byRows, int64_t begin, int64_t end) {
    if (byRows) {
      // Row r of op(a) starts at a + r * lda, or at column r (a + r) when a is transposed.
      const float *aBand = transA ? a + begin : a + begin * lda;
      call(transA, transB, end - begin, n, k, alpha, aBand, lda, b, ldb, beta, y + begin * ldy,
           ldy);
    } else {
      // Column c of op(b) starts at b + c, or at row c (b + c * ldb) when b is transposed.
      const float *bBand = transB ? b + begin * ldb : b + begin;
      call(transA, transB, m, end - begin, k, alpha, a, lda, bBand, ldb, beta, y + begin, ldy);
    }
  });
}

void forEachGemmBand(int64_t m, int64_t n, int64_t k,
                     const std::function<void(bool byRows, int64_t begin, int64_t end)> &band) {
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = cpuKernelThreads();
  if (threads < 2 || work < threads * kMultiplyAddsPerThread) {
    band(true, 0, m);
    return;
  }
  // Bands of rows of op(a) and y; a product with few rows splits its columns instead.
  const bool byRows = m >= n || m >= kBand * threads;
  const int64_t extent = byRows ? m : n;
  const int64_t bands = (extent + kBand - 1) / kBand;
  parallelFor(bands, 1, [&](int64_t first, int64_t last) {
    band(byRows, first * kBand, std::min(extent, last * kBand));
  });
}

} // namespace shardc::runtime::cpu
