// matmul (NumPy semantics; an operand may be read transposed: trans_lhs, trans_rhs) and gemm
// (ONNX Gemm), on OpenBLAS sgemm or, for two bf16 operands where the CPU multiplies bf16
// natively and the run asks for it, on oneDNN (onednn_matmul.h).
//
// Operands and result may each be f32, bf16 or f16 (--precision bf16/fp16 stores the products'
// operands and results in 16 bits). The exact path computes every product in f32: a 16-bit
// operand is widened (exactly) into the workspace, sgemm accumulates in f32, and a 16-bit
// result is rounded to nearest-even from the f32 one; matmul stages one batch's matrices at a
// time. That is what a bf16 GEMM with an f32 accumulator computes (products of 16-bit values
// are exact in f32), so the result is bit-identical to casting the operands and the f32
// result, which is how the compiler's precision passes define it. The native path reads two
// bf16 operands in place and sums the same products in oneDNN's order; its f32 sums are then
// rounded as the exact path's are. The workspace is the same on both paths, so a plan's memory
// does not depend on the CPU.
#include "runtime/kernels/cpu/blas.h"
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/matmul_checks.h"
#include "runtime/kernels/cpu/onednn_matmul.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/support/half_float.h"

#include <algorithm>
#include <string>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

// The f32 copies a product of 16-bit tensors computes through, taken from the workspace in this
// order (a, b, y) by the kernel and its workspace-size function alike; null where the tensor is
// f32 and is used directly.
struct F32Staging {
  float *a = nullptr, *b = nullptr, *y = nullptr;
};

// Takes the staging of a product of aCount elements of a, bCount of b and yCount of y.
Status takeStaging(const char *kernel, Workspace &workspace, const Tensor &a, int64_t aCount,
                   const Tensor &b, int64_t bCount, const Tensor &y, int64_t yCount,
                   F32Staging *staging) {
  if (a.dtype != program::F32)
    SHARDC_RETURN_IF_ERROR(workspace.take(kernel, aCount, &staging->a));
  if (b.dtype != program::F32)
    SHARDC_RETURN_IF_ERROR(workspace.take(kernel, bCount, &staging->b));
  if (y.dtype != program::F32)
    SHARDC_RETURN_IF_ERROR(workspace.take(kernel, yCount, &staging->y));
  return Status::ok();
}

// The `count` elements of t from element `offset` as f32: t's own, or widened into `staged`.
const float *widened(const Tensor &t, int64_t offset, int64_t count, float *staged) {
  if (t.dtype == program::BF16) {
    const BFloat16 *in = t.as<BFloat16>() + offset;
    for (int64_t i = 0; i < count; ++i)
      staged[i] = toFloat(in[i]);
    return staged;
  }
  if (t.dtype == program::F16) {
    const Float16 *in = t.as<Float16>() + offset;
    for (int64_t i = 0; i < count; ++i)
      staged[i] = toFloat(in[i]);
    return staged;
  }
  return t.as<float>() + offset;
}

// Rounds the `count` f32 results in `staged` into the 16-bit y from element `offset` (nothing
// to do when y is f32: the product was written there).
void narrowInto(const float *staged, const Tensor &y, int64_t offset, int64_t count) {
  if (y.dtype == program::BF16) {
    BFloat16 *out = y.as<BFloat16>() + offset;
    for (int64_t i = 0; i < count; ++i)
      out[i] = toBFloat16(staged[i]);
  } else if (y.dtype == program::F16) {
    Float16 *out = y.as<Float16>() + offset;
    for (int64_t i = 0; i < count; ++i)
      out[i] = toFloat16(staged[i]);
  }
}

// A product with a 16-bit operand or result stages one product's matrices ([m,k] x [k,n]: the
// tall product, or one batch). A product is never cut into blocks: BLAS sums an element's k
// products in an order that depends on the matrices' sizes, and the 16-bit step must stay
// bit-identical to the f32 product of the same values.
Status takeProductStaging(Workspace &workspace, const Tensor &a, const Tensor &b, const Tensor &y,
                          const MatmulShape &shape, F32Staging *staging) {
  const int64_t m = shape.rows(), n = shape.n, k = shape.k;
  return takeStaging("matmul", workspace, a, m * k, b, k * n, y, m * n, staging);
}

// Whether y = alpha * op(a) * op(b) + beta * y takes the native bf16 path.
bool native(const Tensor &a, const Tensor &b) {
  return a.dtype == program::BF16 && b.dtype == program::BF16 && nativeBf16ProductsEnabled();
}

// y = alpha * op(a) * op(b) + beta * y into the f32 `y`, for a and b from element offsets
// aOffset and bOffset: natively for two bf16 operands when enabled, else one sgemm on the f32
// tensors themselves or on their widened copies.
Status multiply(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                const Tensor &a, int64_t aOffset, const Tensor &b, int64_t bOffset, float beta,
                float *y, const F32Staging &staging) {
  if (native(a, b))
    return nativeBf16Gemm(transA, transB, m, n, k, alpha, a.as<BFloat16>() + aOffset,
                          b.as<BFloat16>() + bOffset, beta, y);
  sgemm(transA, transB, m, n, k, alpha, widened(a, aOffset, m * k, staging.a),
        widened(b, bOffset, k * n, staging.b), beta, y);
  return Status::ok();
}

// y[m,n] = op(a)[m,k] * op(b)[k,n] for the matrices at element offsets aOffset, bOffset,
// yOffset (op: transposed when the shape says so).
Status product(const Tensor &a, int64_t aOffset, const Tensor &b, int64_t bOffset,
               const Tensor &y, int64_t yOffset, const MatmulShape &shape, int64_t m,
               const F32Staging &staging) {
  const int64_t n = shape.n, k = shape.k;
  if (native(a, b) && y.dtype == program::BF16)
    return nativeBf16Gemm(shape.transA, shape.transB, m, n, k, a.as<BFloat16>() + aOffset,
                          b.as<BFloat16>() + bOffset, y.as<BFloat16>() + yOffset);
  float *py = y.dtype == program::F32 ? y.as<float>() + yOffset : staging.y;
  SHARDC_RETURN_IF_ERROR(
      multiply(shape.transA, shape.transB, m, n, k, 1.0f, a, aOffset, b, bOffset, 0.0f, py, staging));
  narrowInto(py, y, yOffset, m * n);
  return Status::ok();
}

} // namespace

Status matmulWorkspace(const KernelArgs &args, uint64_t *bytes) {
  MatmulShape shape;
  SHARDC_RETURN_IF_ERROR(checkMatmul(args, &shape));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  F32Staging staging;
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    return takeProductStaging(workspace, a, b, y, shape, &staging);
  });
}

Status matmulKernel(KernelArgs &args) {
  MatmulShape shape;
  SHARDC_RETURN_IF_ERROR(checkMatmul(args, &shape));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  F32Staging staging;
  Workspace workspace(args);
  SHARDC_RETURN_IF_ERROR(takeProductStaging(workspace, a, b, y, shape, &staging));
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  if (shape.tall)
    return product(a, 0, b, 0, y, 0, shape, shape.rows(), staging);
  // One product per batch; the broadcast walk yields the matrix index in a and b for each.
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(planBroadcast({&shape.batchA, &shape.batchB}, shape.batch, &loop));
  struct Offsets {
    int64_t a, b, y;
  };
  std::vector<Offsets> products;
  products.reserve(static_cast<size_t>(shape.batchCount()));
  forEachRow(loop, [&](int64_t outOffset, const int64_t *in, const int64_t *stride, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      products.push_back({(in[0] + i * stride[0]) * m * k, (in[1] + i * stride[1]) * k * n,
                          (outOffset + i) * m * n});
  });
  // f32 products (attention's batches of heads) and native bf16 ones run side by side, one per
  // thread (each one's sgemm or oneDNN call then runs on its thread); staged ones share one
  // staging area, so run in turn.
  const bool staged = !(native(a, b) && y.dtype == program::BF16) &&
                      (staging.a != nullptr || staging.b != nullptr || staging.y != nullptr);
  const int64_t grain = staged ? static_cast<int64_t>(products.size()) : 1;
  std::vector<Status> failures(static_cast<size_t>(products.size()), Status::ok());
  parallelFor(static_cast<int64_t>(products.size()), grain, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p)
      failures[p] = product(a, products[p].a, b, products[p].b, y, products[p].y, shape, m, staging);
  });
  for (const Status &failure : failures)
    SHARDC_RETURN_IF_ERROR(failure);
  return Status::ok();
}

Status gemmWorkspace(const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(checkOperands("gemm", args, Arity::withOptional(2, 1), Arity::exactly(1)));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(checkProductDtypes("gemm", a, b, y));
  F32Staging staging;
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    return takeStaging("gemm", workspace, a, a.numel(), b, b.numel(), y, y.numel(), &staging);
  });
}

Status gemmKernel(KernelArgs &args) {
  GemmShape shape;
  SHARDC_RETURN_IF_ERROR(checkGemm(args, &shape));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  const Tensor noC;
  const Tensor &c = args.inputs.size() > 2 ? args.inputs[2] : noC;
  const float alpha = shape.alpha, beta = shape.beta;
  const int64_t m = shape.m, n = shape.n, k = shape.k;

  F32Staging staging;
  Workspace workspace(args);
  SHARDC_RETURN_IF_ERROR(
      takeStaging("gemm", workspace, a, a.numel(), b, b.numel(), y, y.numel(), &staging));
  float *py = y.dtype == program::F32 ? y.as<float>() : staging.y;
  float betaForBlas = 0.0f;
  if (c.present()) {
    StridedLoop loop;
    SHARDC_RETURN_IF_ERROR(planGemmC(c, y, &loop));
    // y starts as c broadcast to [M,N]; sgemm then adds alpha*op(a)*op(b) to beta*y.
    copyStrided(c.as<float>(), py, loop);
    betaForBlas = beta;
  }
  SHARDC_RETURN_IF_ERROR(multiply(shape.transA, shape.transB, m, n, k, alpha, a, 0, b, 0,
                                  betaForBlas, py, staging));
  narrowInto(py, y, 0, y.numel());
  return Status::ok();
}

} // namespace shardc::runtime::cpu
