// softmax and log_softmax over one axis (opset >= 13), numerically stable: the maximum along
// the axis is subtracted before exponentiating.
#include "runtime/kernels/cpu/softmax.h"

#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/fast_exp.h"
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/norm_checks.h"
#include "runtime/kernels/cpu/vector_dispatch.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardc::runtime::cpu {

namespace {

// Running maximum that lets a NaN win, so that a NaN anywhere along the axis poisons the whole
// slice as it does in NumPy.
inline float nanMax(float m, float v) { return (v > m || v != v) ? v : m; }

// The reductions below keep kLanes independent partial results, so that the compiler can
// hold them in vector registers (an in-order float reduction cannot be vectorised without
// -ffast-math).
constexpr int kLanes = 8;

float maxWithNaN(const float *v, int64_t n) {
  float lanes[kLanes];
  for (int lane = 0; lane < kLanes; ++lane)
    lanes[lane] = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int lane = 0; lane < kLanes; ++lane)
      lanes[lane] = nanMax(lanes[lane], v[i + lane]);
  float m = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i)
    m = nanMax(m, v[i]);
  for (int lane = 0; lane < kLanes; ++lane)
    m = nanMax(m, lanes[lane]);
  return m;
}

double sumAsDouble(const float *v, int64_t n) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int lane = 0; lane < kLanes; ++lane)
      lanes[lane] += v[i + lane];
  double sum = 0;
  for (; i < n; ++i)
    sum += v[i];
  for (int lane = 0; lane < kLanes; ++lane)
    sum += lanes[lane];
  return sum;
}

// One contiguous slice of `dim` elements (the softmax axis is the innermost one).
void softmaxContiguous(const float *x, float *y, int64_t dim, bool logOutput) {
  const float m = maxWithNaN(x, dim);
  // The exponentials go to y first (vectorised loop), then are summed.
  vectorLoop(0, dim, [&](int64_t j) { y[j] = fastExp(x[j] - m); });
  const double sum = sumAsDouble(y, dim);
  if (logOutput) {
    const float logSum = static_cast<float>(std::log(sum));
    vectorLoop(0, dim, [&](int64_t j) { y[j] = (x[j] - m) - logSum; });
  } else {
    const float s = static_cast<float>(sum);
    vectorLoop(0, dim, [&](int64_t j) { y[j] /= s; });
  }
}

// One [dim, inner] block whose softmax axis is the outer one: every step runs along `inner`,
// which is contiguous, keeping a running max and sum per inner position.
void softmaxStrided(const float *x, float *y, int64_t dim, int64_t inner, bool logOutput,
                    const SoftmaxScratch &scratch) {
  float *m = scratch.maxes;
  double *s = scratch.sums;
  std::fill(m, m + inner, -std::numeric_limits<float>::infinity());
  std::fill(s, s + inner, 0.0);
  for (int64_t j = 0; j < dim; ++j)
    for (int64_t i = 0; i < inner; ++i)
      m[i] = nanMax(m[i], x[j * inner + i]);
  for (int64_t j = 0; j < dim; ++j) {
    for (int64_t i = 0; i < inner; ++i) {
      const float e = fastExp(x[j * inner + i] - m[i]);
      y[j * inner + i] = e;
      s[i] += e;
    }
  }
  if (logOutput) {
    // The per-position log(sum) replaces the sums, narrowed to float like the result.
    for (int64_t i = 0; i < inner; ++i)
      s[i] = static_cast<float>(std::log(s[i]));
    for (int64_t j = 0; j < dim; ++j)
      for (int64_t i = 0; i < inner; ++i)
        y[j * inner + i] = (x[j * inner + i] - m[i]) - static_cast<float>(s[i]);
  } else {
    for (int64_t j = 0; j < dim; ++j)
      for (int64_t i = 0; i < inner; ++i)
        y[j * inner + i] /= static_cast<float>(s[i]);
  }
}

// The part of the checks that the workspace size depends on: x and the axis.
Status readAxisSizes(const char *kernel, const KernelArgs &args, int64_t *outer, int64_t *dim,
                     int64_t *inner) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &x = args.inputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, x.rank()));
  const size_t ax = static_cast<size_t>(axis);
  *outer = dimsProduct(x.shape, 0, ax);
  *dim = x.shape[ax];
  *inner = dimsProduct(x.shape, ax + 1, x.shape.size());
  return Status::ok();
}

Status softmaxWorkspaceCommon(const char *kernel, const KernelArgs &args, uint64_t *bytes) {
  int64_t outer = 0, dim = 0, inner = 0;
  SHARDC_RETURN_IF_ERROR(readAxisSizes(kernel, args, &outer, &dim, &inner));
  SoftmaxScratch scratch;
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    return takeSoftmaxScratch(kernel, workspace, inner, &scratch);
  });
}

Status softmaxCommon(const char *kernel, KernelArgs &args, bool logOutput) {
  AxisSizes sizes;
  SHARDC_RETURN_IF_ERROR(checkSoftmax(kernel, args, &sizes));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const int64_t outer = sizes.outer, dim = sizes.dim, inner = sizes.inner;
  Workspace workspace(args);
  SoftmaxScratch scratch;
  SHARDC_RETURN_IF_ERROR(takeSoftmaxScratch(kernel, workspace, inner, &scratch));
  softmaxAlongAxis(x.as<float>(), y.as<float>(), outer, dim, inner, logOutput, scratch);
  return Status::ok();
}

} // namespace

Status takeSoftmaxScratch(const char *kernel, Workspace &workspace, int64_t inner,
                          SoftmaxScratch *scratch) {
  if (inner == 1)
    return Status::ok();
  SHARDC_RETURN_IF_ERROR(workspace.take(kernel, inner, &scratch->maxes));
  return workspace.take(kernel, inner, &scratch->sums);
}

void softmaxAlongAxis(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner,
                      bool logOutput, const SoftmaxScratch &scratch) {
  if (inner == 1) {
    // Rows are independent: split over the kernel threads.
    const int64_t grain = kElementsPerThread / std::max<int64_t>(dim, 1);
    parallelFor(outer, grain, [&](int64_t first, int64_t last) {
      for (int64_t o = first; o < last; ++o)
        softmaxContiguous(x + o * dim, y + o * dim, dim, logOutput);
    });
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    softmaxStrided(x + o * dim * inner, y + o * dim * inner, dim, inner, logOutput, scratch);
}

Status softmaxKernel(KernelArgs &args) { return softmaxCommon("softmax", args, false); }

Status logSoftmaxKernel(KernelArgs &args) { return softmaxCommon("log_softmax", args, true); }

Status softmaxWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return softmaxWorkspaceCommon("softmax", args, bytes);
}

Status logSoftmaxWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return softmaxWorkspaceCommon("log_softmax", args, bytes);
}

} // namespace shardc::runtime::cpu
