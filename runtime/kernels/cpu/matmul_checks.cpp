#include "runtime/kernels/cpu/matmul_checks.h"

#include "runtime/kernels/cpu/blas.h"
#include "runtime/kernels/cpu/checks.h"

#include <string>

namespace shardc::runtime::cpu {

namespace {

bool isProductDtype(DType dtype) {
  return dtype == program::F32 || dtype == program::BF16 || dtype == program::F16;
}

Status expectProductDtype(const char *kernel, const char *role, const Tensor &t) {
  if (isProductDtype(t.dtype))
    return Status::ok();
  return Status::error(std::string(kernel) + ": " + role + " " + t.describe() +
                       " must be f32, bf16 or f16");
}

} // namespace

Status checkProductDtypes(const char *kernel, const Tensor &a, const Tensor &b, const Tensor &y) {
  SHARDC_RETURN_IF_ERROR(expectProductDtype(kernel, "a", a));
  SHARDC_RETURN_IF_ERROR(expectProductDtype(kernel, "b", b));
  return expectProductDtype(kernel, "y", y);
}

int64_t MatmulShape::batchCount() const { return dimsProduct(batch, 0, batch.size()); }

Status matmulShape(const Tensor &a, const Tensor &b, const Tensor &y, bool transA, bool transB,
                   MatmulShape *shape) {
  if (a.rank() == 0 || b.rank() == 0)
    return Status::error("matmul: operands must have rank >= 1, got " + a.describe() + " and " +
                         b.describe());
  if ((transA && a.rank() < 2) || (transB && b.rank() < 2))
    return Status::error("matmul: a transposed operand must have rank >= 2, got " +
                         a.describe() + (transA ? " (transposed)" : "") + " and " + b.describe() +
                         (transB ? " (transposed)" : ""));
  // NumPy promotion: a 1-D a is [1,K] and a 1-D b is [K,1]; the added dim is dropped from y.
  const bool vectorA = a.rank() == 1, vectorB = b.rank() == 1;
  MatmulShape &s = *shape;
  s.transA = transA;
  s.transB = transB;
  s.batchA.assign(a.shape.begin(), a.shape.end() - (vectorA ? 1 : 2));
  s.batchB.assign(b.shape.begin(), b.shape.end() - (vectorB ? 1 : 2));
  const int64_t last = a.shape.back(), beforeLast = vectorA ? 1 : a.shape[a.rank() - 2];
  s.m = transA ? last : beforeLast;
  s.k = transA ? beforeLast : last;
  const int64_t bLast = b.shape.back(), bBeforeLast = vectorB ? b.shape[0] : b.shape[b.rank() - 2];
  const int64_t kb = transB ? bLast : bBeforeLast;
  s.n = vectorB ? 1 : (transB ? bBeforeLast : bLast);
  if (s.k != kb)
    return Status::error("matmul: inner dimensions differ: " + a.describe() + " x " + b.describe());
  Status status = broadcastShapes(s.batchA, s.batchB, &s.batch);
  if (!status)
    return Status::error("matmul: batch dims: " + status.message());
  std::vector<int64_t> expected = s.batch;
  if (!vectorA)
    expected.push_back(s.m);
  if (!vectorB)
    expected.push_back(s.n);
  SHARDC_RETURN_IF_ERROR(expectShape("matmul", "y", y, expected));
  SHARDC_RETURN_IF_ERROR(checkBlasDims("matmul", {s.m, s.n, s.k}));
  const int64_t batchCount = s.batchCount();
  s.tall = !transA && dimsProduct(s.batchB, 0, s.batchB.size()) == 1 &&
           dimsProduct(s.batchA, 0, s.batchA.size()) == batchCount &&
           s.m * batchCount <= 0x7fffffff;
  return Status::ok();
}

Status checkMatmul(const KernelArgs &args, MatmulShape *shape) {
  SHARDC_RETURN_IF_ERROR(checkOperands("matmul", args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  SHARDC_RETURN_IF_ERROR(checkProductDtypes("matmul", a, b, y));
  int64_t transA = 0, transB = 0;
  if (hasAttr(args, "trans_lhs"))
    SHARDC_RETURN_IF_ERROR(getIntAttr(args, "trans_lhs", &transA));
  if (hasAttr(args, "trans_rhs"))
    SHARDC_RETURN_IF_ERROR(getIntAttr(args, "trans_rhs", &transB));
  return matmulShape(a, b, y, transA != 0, transB != 0, shape);
}

Status checkGemm(const KernelArgs &args, GemmShape *shape) {
  SHARDC_RETURN_IF_ERROR(checkOperands("gemm", args, Arity::withOptional(2, 1), Arity::exactly(1)));
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
  GemmShape &s = *shape;
  int64_t transA = 0, transB = 0;
  SHARDC_RETURN_IF_ERROR(getFloatAttr(args, "alpha", &s.alpha));
  SHARDC_RETURN_IF_ERROR(getFloatAttr(args, "beta", &s.beta));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "trans_a", &transA));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "trans_b", &transB));
  s.transA = transA != 0;
  s.transB = transB != 0;
  SHARDC_RETURN_IF_ERROR(checkProductDtypes("gemm", a, b, y));
  if (a.rank() != 2 || b.rank() != 2)
    return Status::error("gemm: a and b must be 2-D, got " + a.describe() + " and " + b.describe());
  s.m = s.transA ? a.shape[1] : a.shape[0];
  s.k = s.transA ? a.shape[0] : a.shape[1];
  const int64_t kb = s.transB ? b.shape[1] : b.shape[0];
  s.n = s.transB ? b.shape[0] : b.shape[1];
  if (s.k != kb)
    return Status::error("gemm: inner dimensions differ: op(a) is [" + std::to_string(s.m) + "x" +
                         std::to_string(s.k) + "], op(b) is [" + std::to_string(kb) + "x" +
                         std::to_string(s.n) + "]");
  SHARDC_RETURN_IF_ERROR(expectShape("gemm", "y", y, {s.m, s.n}));
  return checkBlasDims("gemm", {s.m, s.n, s.k});
}

Status planGemmC(const Tensor &c, const Tensor &y, StridedLoop *loop) {
  SHARDC_RETURN_IF_ERROR(expectDtype("gemm", "c", c, program::F32));
  Status s = planBroadcast({&c.shape}, y.shape, loop);
  if (!s)
    return Status::error("gemm: c: " + s.message());
  return Status::ok();
}

} // namespace shardc::runtime::cpu
