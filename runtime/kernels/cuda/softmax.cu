// softmax, log_softmax and their backwards on CUDA. Contracts and messages are the CPU kernels'
// (cpu/norm_checks.h). The tensor is viewed as [outer, dim, inner]; each of the outer * inner
// slices along the axis is one "row" of `dim` elements `inner` apart, reduced by one block with
// fp32 accumulation (the CPU sums in double; the difference is far below the tests' 1e-5).
// An inner > 1 axis reads with a stride: correct but uncoalesced; the hot case (a GPT's last
// axis) has inner == 1.
#include "runtime/kernels/cpu/norm_checks.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/kernels/cuda/row_reduce.cuh"

#include <cmath>

namespace shardc::runtime::cuda {

namespace {

// The element offset of row `r`'s first element, for rows of `dim` elements `inner` apart.
__device__ inline int64_t rowBase(int64_t r, int64_t dim, int64_t inner) {
  return (r / inner) * dim * inner + r % inner;
}

__global__ void softmaxRows(const float *__restrict__ x, float *__restrict__ y, int64_t rows,
                            int64_t dim, int64_t inner, bool logOutput) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = rowBase(r, dim, inner);
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
      m = NanMaxOp()(m, x[base + j * inner]);
    m = blockReduce(m, NanMaxOp(), -INFINITY);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
      sum += expf(x[base + j * inner] - m);
    sum = blockReduce(sum, SumOp(), 0.0f);
    if (logOutput) {
      const float logSum = logf(sum);
      for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
        y[base + j * inner] = (x[base + j * inner] - m) - logSum;
    } else {
      for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
        y[base + j * inner] = expf(x[base + j * inner] - m) / sum;
    }
  }
}

//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy)
__global__ void softmaxGradRows(const float *__restrict__ dy, const float *__restrict__ y,
                                float *__restrict__ dx, int64_t rows, int64_t dim, int64_t inner,
                                bool logOutput) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = rowBase(r, dim, inner);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      const int64_t at = base + j * inner;
      sum += logOutput ? dy[at] : dy[at] * y[at];
    }
    sum = blockReduce(sum, SumOp(), 0.0f);
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      const int64_t at = base + j * inner;
      dx[at] = logOutput ? dy[at] - expf(y[at]) * sum : y[at] * (dy[at] - sum);
    }
  }
}

Status softmaxCommon(const char *kernel, KernelArgs &args, bool logOutput) {
  cpu::AxisSizes s;
  SHARDC_RETURN_IF_ERROR(cpu::checkSoftmax(kernel, args, &s));
  const int64_t rows = s.outer * s.inner;
  if (rows == 0 || s.dim == 0)
    return Status::ok();
  softmaxRows<<<rowGrid(rows), rowBlock(s.dim), 0, streamOf(args)>>>(
      args.inputs[0].as<float>(), args.outputs[0].as<float>(), rows, s.dim, s.inner, logOutput);
  return launchStatus(kernel);
}

Status softmaxGradCommon(const char *kernel, KernelArgs &args, bool logOutput) {
  cpu::AxisSizes s;
  SHARDC_RETURN_IF_ERROR(cpu::checkSoftmaxGrad(kernel, args, &s));
  const int64_t rows = s.outer * s.inner;
  if (rows == 0 || s.dim == 0)
    return Status::ok();
  softmaxGradRows<<<rowGrid(rows), rowBlock(s.dim), 0, streamOf(args)>>>(
      args.inputs[0].as<float>(), args.inputs[1].as<float>(), args.outputs[0].as<float>(), rows,
      s.dim, s.inner, logOutput);
  return launchStatus(kernel);
}

} // namespace

// Also softmax_cross_entropy_loss's first step (losses.cu): log_softmax along the class axis.
Status launchLogSoftmax(const char *kernel, const float *x, float *y, int64_t outer, int64_t dim,
                        int64_t inner, void *stream) {
  const int64_t rows = outer * inner;
  if (rows == 0 || dim == 0)
    return Status::ok();
  softmaxRows<<<rowGrid(rows), rowBlock(dim), 0, static_cast<cudaStream_t>(stream)>>>(
      x, y, rows, dim, inner, /*logOutput=*/true);
  return launchStatus(kernel);
}

Status softmaxKernel(KernelArgs &args) { return softmaxCommon("softmax", args, false); }
Status logSoftmaxKernel(KernelArgs &args) { return softmaxCommon("log_softmax", args, true); }
Status softmaxGradKernel(KernelArgs &args) {
  return softmaxGradCommon("softmax_grad", args, false);
}
Status logSoftmaxGradKernel(KernelArgs &args) {
  return softmaxGradCommon("log_softmax_grad", args, true);
}

} // namespace shardc::runtime::cuda
