// The OpenBLAS sgemm wrapper shared by the kernels built on matrix products (matmul, gemm and the
// convolutions), and the check that keeps their dims within BLAS's 32-bit ints.
#pragma once

#include "runtime/support/status.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>

namespace shardc::runtime::cpu {

// y[M,N] = alpha * op(a) * op(b) + beta * y, row-major, for M, N >= 0 and K >= 0 (blas.cpp).
// BLAS wants leading dimensions >= 1 even for empty matrices, and some implementations leave C
// untouched when K == 0, so the degenerate cases are handled here. A product large enough is
// split into bands of rows (or of columns, when it has few rows) run side by side on the
// kernel pool (kernel_threads.h), each one single-threaded OpenBLAS call: OpenBLAS's own
// threads are not used, so no second set of threads spins beside the pool's between GEMMs.
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
           const float *b, float beta, float *y);

// sgemm on matrices with leading dimensions of their own (lda, ldb, ldy: the row strides of a,
// b and y as stored), so that a product reads or writes a block of columns of a larger matrix;
// banded over the kernel pool as sgemm is. Its transposed operands are read as they are (the
// small-product copies that keep sgemm's bits independent of the layout are not made).
void sgemmStrided(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *y,
                  int64_t ldy);

// Runs the product y[M,N] (sums of K terms) as bands: band(byRows, begin, end) computes rows
// [begin, end) of y (byRows) or its columns [begin, end). One band, (true, 0, M), on the calling
// thread when the product is too small to be worth a second thread; else bands of whole
// multiples of 16 rows (or columns, for a product with few rows), at least 2^21 multiply-adds
// each, side by side on the kernel pool. sgemm and the native bf16 products share it.
void forEachGemmBand(int64_t m, int64_t n, int64_t k,
                     const std::function<void(bool byRows, int64_t begin, int64_t end)> &band);

// BLAS takes 32-bit dims; larger matrices are reported instead of silently truncated.
inline Status checkBlasDims(const char *kernel, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (d > 0x7fffffff)
      return Status::error(std::string(kernel) + ": matrix dimension " + std::to_string(d) +
                           " exceeds the BLAS limit");
  return Status::ok();
}

} // namespace shardc::runtime::cpu
