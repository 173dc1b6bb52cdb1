// The contracts of matmul and gemm (operand counts, dtypes, shapes, attributes), written once for
// every device: the CPU and CUDA kernels call the same checks, so both refuse the same operands
// with the same messages. They read only dtypes, shapes and attributes, never the data.
#pragma once

#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// a, b and y each f32, bf16 or f16 (independently of each other).
Status checkProductDtypes(const char *kernel, const Tensor &a, const Tensor &b, const Tensor &y);

// A matmul's shapes, as the kernels and their workspace functions need them.
struct MatmulShape {
  std::vector<int64_t> batchA, batchB, batch;
  int64_t m = 0, n = 0, k = 0;
  // trans_lhs / trans_rhs: a's matrices are stored [K, M] (b's [N, K]) and read transposed.
  bool transA = false, transB = false;
  // b is shared by every batch and a's batches are contiguous, untransposed rows: one tall
  // product ([batch*M, K] x [K, N]) instead of many small ones. This is the usual linear layer.
  bool tall = false;
  int64_t batchCount() const;
  int64_t rows() const { return tall ? batchCount() * m : m; }
};

// NumPy matmul of a and b into y (1-D promotion, broadcast batch dims), a read transposed
// when transA and b when transB (each then of rank >= 2): the shapes, or the error.
Status matmulShape(const Tensor &a, const Tensor &b, const Tensor &y, bool transA, bool transB,
                   MatmulShape *shape);

// matmul's whole contract: two inputs, one output, product dtypes, the optional trans_lhs and
// trans_rhs attributes (absent: 0), shapes.
Status checkMatmul(const KernelArgs &args, MatmulShape *shape);

// gemm's attributes and the 2-D shapes of op(a) [m,k], op(b) [k,n] and y [m,n].
struct GemmShape {
  float alpha = 0, beta = 0;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
};

// gemm's contract for a, b and y (c is checked by planGemmC): operand counts, attributes,
// dtypes, shapes.
Status checkGemm(const KernelArgs &args, GemmShape *shape);

// gemm's optional c: f32, broadcast (unidirectionally) to y's shape; plans that walk.
Status planGemmC(const Tensor &c, const Tensor &y, StridedLoop *loop);

} // namespace shardc::runtime::cpu
