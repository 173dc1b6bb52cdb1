// softmax_grad and log_softmax_grad: the backwards of softmax and log_softmax along one axis,
// computed from the forward's output y (the usual choice: y is kept for the backward anyway,
// and recomputing the softmax from x would cost a second exp pass).
//   softmax:     dx = y * (dy - sum(dy * y, axis))
//   log_softmax: dx = dy - exp(y) * sum(dy, axis)
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"

#include <cmath>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

Status softmaxGradCommon(const char *kernel, KernelArgs &args, bool logOutput) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &y = args.inputs[1], &dx = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dy", dy, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "y", y, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "y", y, dy.shape));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dx", dx, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "dx", dx, dy.shape));
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, dy.rank()));
  const size_t ax = static_cast<size_t>(axis);
  const int64_t outer = dimsProduct(dy.shape, 0, ax);
  const int64_t dim = dy.shape[ax];
  const int64_t inner = dimsProduct(dy.shape, ax + 1, dy.shape.size());

  // Viewed as [outer, dim, inner]: one double sum per inner position, accumulated while
  // walking contiguous inner rows (so an inner axis of 1 and a strided axis share one loop).
  std::vector<double> sums(static_cast<size_t>(inner));
  const float *pdy = dy.as<float>(), *py = y.as<float>();
  float *pdx = dx.as<float>();
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * dim * inner;
    sums.assign(sums.size(), 0.0);
    for (int64_t j = 0; j < dim; ++j) {
      const float *dyRow = pdy + base + j * inner;
      const float *yRow = py + base + j * inner;
      for (int64_t i = 0; i < inner; ++i)
        sums[static_cast<size_t>(i)] +=
            logOutput ? static_cast<double>(dyRow[i])
                      : static_cast<double>(dyRow[i]) * static_cast<double>(yRow[i]);
    }
    for (int64_t j = 0; j < dim; ++j) {
      const int64_t row = base + j * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const float s = static_cast<float>(sums[static_cast<size_t>(i)]);
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

} // namespace shardc::runtime::cpu
