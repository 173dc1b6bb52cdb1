// sgemm over the kernel pool (blas.h).
//
// Every element of C is a sum over K that OpenBLAS's kernels form in an order set by K alone
// (its K blocking and the micro-kernel's loop), not by M or N: a band of rows or columns
// computed by its own call gets the bits the whole call gives it, so the result does not
// depend on the thread count (vector_threads_test.cpp compares 1 and 2 threads bit for bit).
#include "runtime/kernels/cpu/blas.h"

#include "runtime/kernels/cpu/kernel_threads.h"

#include <cblas.h>

#include <algorithm>

namespace shardc::runtime::cpu {

namespace {

// Multiply-adds below which a second thread costs about what it saves (a wake-up is a few
// microseconds; a 2-core machine does about 50 multiply-adds per nanosecond).
constexpr double kMultiplyAddsPerThread = 1 << 20;
// Bands are whole multiples of this many rows or columns (the micro-kernels' widest tile),
// so no band but the last has a ragged edge.
constexpr int64_t kBand = 16;

void call(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *y, int64_t ldy) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, y, static_cast<int>(ldy));
}

} // namespace

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
           const float *b, float beta, float *y) {
  if (m == 0 || n == 0)
    return;
  if (k == 0 || alpha == 0.0f) {
    for (int64_t i = 0; i < m * n; ++i)
      y[i] = beta == 0.0f ? 0.0f : beta * y[i];
    return;
  }
  // OpenBLAS starts with a thread per core; its calls here run on the caller's thread only
  // (setCpuKernelThreads says so too, for a process that sets the count).
  static const bool singleThreaded = (openblas_set_num_threads(1), true);
  (void)singleThreaded;
  const int64_t lda = transA ? m : k;
  const int64_t ldb = transB ? k : n;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = cpuKernelThreads();
  if (threads < 2 || work < 2 * kMultiplyAddsPerThread) {
    call(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, y, n);
    return;
  }
  // Bands of rows of op(a) and y; a product with few rows splits its columns instead.
  const bool byRows = m >= n || m >= kBand * threads;
  const int64_t extent = byRows ? m : n;
  const int64_t bands = (extent + kBand - 1) / kBand;
  parallelFor(bands, 1, [&](int64_t first, int64_t last) {
    const int64_t begin = first * kBand, end = std::min(extent, last * kBand);
    if (byRows) {
      // Row r of op(a) starts at a + r * lda, or at column r (a + r) when a is transposed.
      const float *aBand = transA ? a + begin : a + begin * lda;
      call(transA, transB, end - begin, n, k, alpha, aBand, lda, b, ldb, beta, y + begin * n, n);
    } else {
      // Column c of op(b) starts at b + c, or at row c (b + c * ldb) when b is transposed.
      const float *bBand = transB ? b + begin * ldb : b + begin;
      call(transA, transB, m, end - begin, k, alpha, a, lda, bBand, ldb, beta, y + begin, n);
    }
  });
}

} // namespace shardc::runtime::cpu
