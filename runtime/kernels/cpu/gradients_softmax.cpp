// softmax_grad and log_softmax_grad: the backwards of softmax and log_softmax along one axis,
// computed from the forward's output y (the usual choice: y is kept for the backward anyway,
// and recomputing the softmax from x would cost a second exp pass).
//   softmax:     dx = y * (dy - sum(dy * y, axis))
//   log_softmax: dx = dy - exp(y) * sum(dy, axis)
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/norm_checks.h"
#include "runtime/kernels/cpu/vector_dispatch.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <cmath>

namespace shardc::runtime::cpu {

namespace {

// The workspace: one sum per position of the dims after the axis.
Status takeSums(const char *kernel, Workspace &workspace, int64_t inner, double **sums) {
  return workspace.take(kernel, inner, sums);
}

Status softmaxGradWorkspaceCommon(const char *kernel, const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &dy = args.inputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, dy.rank()));
  const int64_t inner = dimsProduct(dy.shape, static_cast<size_t>(axis) + 1, dy.shape.size());
  double *sums = nullptr;
  return measureWorkspace(
      bytes, [&](Workspace &workspace) { return takeSums(kernel, workspace, inner, &sums); });
}

Status softmaxGradCommon(const char *kernel, KernelArgs &args, bool logOutput) {
  AxisSizes sizes;
  SHARDC_RETURN_IF_ERROR(checkSoftmaxGrad(kernel, args, &sizes));
  const Tensor &dy = args.inputs[0], &y = args.inputs[1], &dx = args.outputs[0];
  const int64_t outer = sizes.outer, dim = sizes.dim, inner = sizes.inner;

  // Viewed as [outer, dim, inner]: one double sum per inner position, accumulated while
  // walking contiguous inner rows (so an inner axis of 1 and a strided axis share one loop).
  Workspace workspace(args);
  double *sums = nullptr;
  SHARDC_RETURN_IF_ERROR(takeSums(kernel, workspace, inner, &sums));
  const float *pdy = dy.as<float>(), *py = y.as<float>();
  float *pdx = dx.as<float>();
  if (inner == 1) {
    // The usual case (the last axis): rows are independent, split over the kernel threads;
    // each row's sum is the same sequential double sum as below.
    const int64_t grain = kElementsPerThread / std::max<int64_t>(dim, 1);
    parallelFor(outer, grain, [&](int64_t first, int64_t last) {
      for (int64_t o = first; o < last; ++o) {
        const float *dyRow = pdy + o * dim, *yRow = py + o * dim;
        float *dxRow = pdx + o * dim;
        double sum = 0.0;
        if (logOutput)
          for (int64_t j = 0; j < dim; ++j)
            sum += static_cast<double>(dyRow[j]);
        else
          for (int64_t j = 0; j < dim; ++j)
            sum += static_cast<double>(dyRow[j]) * static_cast<double>(yRow[j]);
        const float s = static_cast<float>(sum);
        if (logOutput)
          vectorLoop(0, dim, [&](int64_t j) { dxRow[j] = dyRow[j] - std::exp(yRow[j]) * s; });
        else
          vectorLoop(0, dim, [&](int64_t j) { dxRow[j] = yRow[j] * (dyRow[j] - s); });
      }
    });
    return Status::ok();
  }
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * dim * inner;
    std::fill(sums, sums + inner, 0.0);
    for (int64_t j = 0; j < dim; ++j) {
      const float *dyRow = pdy + base + j * inner;
      const float *yRow = py + base + j * inner;
      for (int64_t i = 0; i < inner; ++i)
        sums[i] += logOutput ? static_cast<double>(dyRow[i])
                             : static_cast<double>(dyRow[i]) * static_cast<double>(yRow[i]);
    }
    for (int64_t j = 0; j < dim; ++j) {
      const int64_t row = base + j * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const float s = static_cast<float>(sums[i]);
        pdx[row + i] =
            logOutput ? pdy[row + i] - std::exp(py[row + i]) * s : py[row + i] * (pdy[row + i] - s);
      }
    }
  }
  return Status::ok();
}

} // namespace

Status softmaxGradKernel(KernelArgs &args) {
  return softmaxGradCommon("softmax_grad", args, /*logOutput=*/false);
}

Status logSoftmaxGradKernel(KernelArgs &args) {
  return softmaxGradCommon("log_softmax_grad", args, /*logOutput=*/true);
}

Status softmaxGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return softmaxGradWorkspaceCommon("softmax_grad", args, bytes);
}

Status logSoftmaxGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return softmaxGradWorkspaceCommon("log_softmax_grad", args, bytes);
}

} // namespace shardc::runtime::cpu
