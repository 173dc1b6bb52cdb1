// The OpenBLAS sgemm wrapper shared by the kernels built on matrix products (matmul, gemm and the
// convolutions), and the check that keeps their dims within BLAS's 32-bit ints.
#pragma once

#include "runtime/support/status.h"

#include <cblas.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace shardc::runtime::cpu {

// y[M,N] = alpha * op(a) * op(b) + beta * y, row-major, for M, N >= 0 and K >= 0. BLAS wants
// leading dimensions >= 1 even for empty matrices, and some implementations leave C untouched
// when K == 0, so the degenerate cases are handled here.
inline void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, const float *b, float beta, float *y) {
  if (m == 0 || n == 0)
    return;
  if (k == 0 || alpha == 0.0f) {
    for (int64_t i = 0; i < m * n; ++i)
      y[i] = beta == 0.0f ? 0.0f : beta * y[i];
    return;
  }
  const int64_t lda = transA ? m : k;
  const int64_t ldb = transB ? k : n;
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, y, static_cast<int>(n));
}

// BLAS takes 32-bit dims; larger matrices are reported instead of silently truncated.
inline Status checkBlasDims(const char *kernel, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (d > 0x7fffffff)
      return Status::error(std::string(kernel) + ": matrix dimension " + std::to_string(d) +
                           " exceeds the BLAS limit");
  return Status::ok();
}

} // namespace shardc::runtime::cpu
