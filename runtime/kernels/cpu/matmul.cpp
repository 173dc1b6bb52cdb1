// matmul (NumPy semantics) and gemm (ONNX Gemm), both on OpenBLAS sgemm.
#include "runtime/kernels/cpu/blas.h"
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"

#include <algorithm>

namespace shardc::runtime::cpu {

Status matmulKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("matmul", args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(expectDtype("matmul", "a", a, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype("matmul", "b", b, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype("matmul", "y", y, program::F32));
  if (a.rank() == 0 || b.rank() == 0)
    return Status::error("matmul: operands must have rank >= 1, got " + a.describe() + " and " +
                         b.describe());

  // NumPy promotion: a 1-D a is [1,K] and a 1-D b is [K,1]; the added dim is dropped from y.
  const bool vectorA = a.rank() == 1, vectorB = b.rank() == 1;
  const std::vector<int64_t> batchA(a.shape.begin(), a.shape.end() - (vectorA ? 1 : 2));
  const std::vector<int64_t> batchB(b.shape.begin(), b.shape.end() - (vectorB ? 1 : 2));
  const int64_t m = vectorA ? 1 : a.shape[a.rank() - 2];
  const int64_t k = a.shape.back();
  const int64_t kb = vectorB ? b.shape[0] : b.shape[b.rank() - 2];
  const int64_t n = vectorB ? 1 : b.shape.back();
  if (k != kb)
    return Status::error("matmul: inner dimensions differ: " + a.describe() + " x " + b.describe());
  std::vector<int64_t> batch;
  Status s = broadcastShapes(batchA, batchB, &batch);
  if (!s)
    return Status::error("matmul: batch dims: " + s.message());
  std::vector<int64_t> expected = batch;
  if (!vectorA)
    expected.push_back(m);
  if (!vectorB)
    expected.push_back(n);
  SHARDC_RETURN_IF_ERROR(expectShape("matmul", "y", y, expected));
  SHARDC_RETURN_IF_ERROR(checkBlasDims("matmul", {m, n, k}));

  const float *pa = a.as<float>();
  const float *pb = b.as<float>();
  float *py = y.as<float>();
  const int64_t batchCount = dimsProduct(batch, 0, batch.size());
  const int64_t batchCountA = dimsProduct(batchA, 0, batchA.size());
  const int64_t batchCountB = dimsProduct(batchB, 0, batchB.size());
  if (batchCountB == 1 && batchCountA == batchCount && m * batchCount <= 0x7fffffff) {
    // b is shared by every batch and a's batches are contiguous: one tall sgemm
    // ([batch*M, K] x [K, N]) instead of many small ones. This is the usual linear layer.
    sgemm(false, false, batchCount * m, n, k, 1.0f, pa, pb, 0.0f, py);
    return Status::ok();
  }
  // One sgemm per batch; the broadcast walk yields the matrix index in a and b for each.
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(planBroadcast({&batchA, &batchB}, batch, &loop));
  forEachRow(loop, [&](int64_t outOffset, const int64_t *in, const int64_t *stride, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      sgemm(false, false, m, n, k, 1.0f, pa + (in[0] + i * stride[0]) * m * k,
            pb + (in[1] + i * stride[1]) * k * n, 0.0f, py + (outOffset + i) * m * n);
  });
  return Status::ok();
}

Status gemmKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("gemm", args, Arity::withOptional(2, 1), Arity::exactly(1)));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  const Tensor noC;
  const Tensor &c = args.inputs.size() > 2 ? args.inputs[2] : noC;
  float alpha = 0, beta = 0;
  int64_t transA = 0, transB = 0;
  SHARDC_RETURN_IF_ERROR(getFloatAttr(args, "alpha", &alpha));
  SHARDC_RETURN_IF_ERROR(getFloatAttr(args, "beta", &beta));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "trans_a", &transA));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "trans_b", &transB));
  SHARDC_RETURN_IF_ERROR(expectDtype("gemm", "a", a, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype("gemm", "b", b, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype("gemm", "y", y, program::F32));
  if (a.rank() != 2 || b.rank() != 2)
    return Status::error("gemm: a and b must be 2-D, got " + a.describe() + " and " + b.describe());
  const int64_t m = transA ? a.shape[1] : a.shape[0];
  const int64_t k = transA ? a.shape[0] : a.shape[1];
  const int64_t kb = transB ? b.shape[1] : b.shape[0];
  const int64_t n = transB ? b.shape[0] : b.shape[1];
  if (k != kb)
    return Status::error("gemm: inner dimensions differ: op(a) is [" + std::to_string(m) + "x" +
                         std::to_string(k) + "], op(b) is [" + std::to_string(kb) + "x" +
                         std::to_string(n) + "]");
  SHARDC_RETURN_IF_ERROR(expectShape("gemm", "y", y, {m, n}));
  SHARDC_RETURN_IF_ERROR(checkBlasDims("gemm", {m, n, k}));

  float *py = y.as<float>();
  float betaForBlas = 0.0f;
  if (c.present()) {
    SHARDC_RETURN_IF_ERROR(expectDtype("gemm", "c", c, program::F32));
    StridedLoop loop;
    Status s = planBroadcast({&c.shape}, y.shape, &loop);
    if (!s)
      return Status::error("gemm: c: " + s.message());
    // y starts as c broadcast to [M,N]; sgemm then adds alpha*op(a)*op(b) to beta*y.
    copyStrided(c.as<float>(), py, loop);
    betaForBlas = beta;
  }
  sgemm(transA != 0, transB != 0, m, n, k, alpha, a.as<float>(), b.as<float>(), betaForBlas, py);
  return Status::ok();
}

} // namespace shardc::runtime::cpu
