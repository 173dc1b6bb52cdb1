// layer_norm_grad: the backward of layer_norm, from the statistics the forward kernel saved.
// With xhat = (x - mean) * inv_std_dev and g = dy * scale, per normalised row of N elements:
//   dx     = inv_std_dev / N * (N * g - sum(g) - xhat * sum(g * xhat))
//   dscale = sum over rows of dy * xhat   (then summed onto scale's broadcast shape)
//   dbias  = sum over rows of dy          (then summed onto bias's broadcast shape)
// This is exact for the forward's inv_std_dev = 1 / sqrt(var + epsilon): epsilon only enters
// through inv_std_dev, so the kernel does not need it.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/norm_checks.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

constexpr const char *kKernel = "layer_norm_grad";

// Writes the dense per-position sums `dense` into `out`, adding together the positions that
// share one element of `out` (its broadcast dims) in `acc` (out.numel() doubles of workspace).
void sumOntoParam(const double *dense, const StridedLoop &loop, const Tensor &out, double *acc) {
  const int64_t n = out.numel();
  std::fill(acc, acc + n, 0.0);
  forEachRow(loop, [&](int64_t denseOffset, const int64_t *paramOffsets,
                       const int64_t *paramStrides, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      acc[paramOffsets[0] + i * paramStrides[0]] += dense[denseOffset + i];
  });
  float *p = out.as<float>();
  for (int64_t i = 0; i < n; ++i)
    p[i] = static_cast<float>(acc[i]);
}

// The workspace of layer_norm_grad: a dense copy of a broadcast scale, the per-position sums
// for dscale and dbias (when wanted), one row of xhat, and the accumulator that sums the dense
// sums onto dscale's and dbias's shapes (shared: they are summed one after the other).
struct Scratch {
  float *scale = nullptr;
  double *dscaleDense = nullptr;
  double *dbiasDense = nullptr;
  double *xhat = nullptr;
  double *acc = nullptr;
};

Status takeScratch(Workspace &workspace, const Tensor &scale, const Tensor &dscale,
                   const Tensor &dbias, int64_t normSize, Scratch *scratch) {
  if (scale.numel() != normSize)
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, normSize, &scratch->scale));
  if (dscale.present())
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, normSize, &scratch->dscaleDense));
  if (dbias.present())
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, normSize, &scratch->dbiasDense));
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, normSize, &scratch->xhat));
  const int64_t accSize =
      std::max(dscale.present() ? dscale.numel() : 0, dbias.present() ? dbias.numel() : 0);
  if (dscale.present() || dbias.present())
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, accSize, &scratch->acc));
  return Status::ok();
}

} // namespace

Status layerNormGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(
      checkOperands(kKernel, args, Arity::exactly(5), Arity::withOptional(0, 3)));
  const Tensor &x = args.inputs[1], &scale = args.inputs[2];
  const Tensor absent;
  const Tensor &dscale = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &dbias = args.outputs.size() > 2 ? args.outputs[2] : absent;
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectAxis(kKernel, "axis", axis, x.rank()));
  const int64_t normSize = dimsProduct(x.shape, static_cast<size_t>(axis), x.shape.size());
  Scratch scratch;
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    return takeScratch(workspace, scale, dscale, dbias, normSize, &scratch);
  });
}

Status layerNormGradKernel(KernelArgs &args) {
  LayerNormPlan plan;
  SHARDC_RETURN_IF_ERROR(checkLayerNormGrad(args, &plan));
  const Tensor &dy = args.inputs[0], &x = args.inputs[1], &scale = args.inputs[2];
  const Tensor &mean = args.inputs[3], &invStd = args.inputs[4];
  const Tensor absent;
  const Tensor &dx = args.outputs.size() > 0 ? args.outputs[0] : absent;
  const Tensor &dscale = args.outputs.size() > 1 ? args.outputs[1] : absent;
  const Tensor &dbias = args.outputs.size() > 2 ? args.outputs[2] : absent;
  const int64_t normSize = plan.normSize, rows = plan.rows;
  const StridedLoop &scaleLoop = plan.scaleLoop, &dbiasLoop = plan.biasLoop;

  Workspace workspace(args);
  Scratch scratch;
  SHARDC_RETURN_IF_ERROR(takeScratch(workspace, scale, dscale, dbias, normSize, &scratch));
  // scale densely over the normalised dims (a dense scale is read in place).
  const float *scaleData = scale.as<float>();
  if (scale.numel() != normSize) {
    copyStrided(scale.as<float>(), scratch.scale, scaleLoop);
    scaleData = scratch.scale;
  }

  double *dscaleDense = scratch.dscaleDense, *dbiasDense = scratch.dbiasDense;
  if (dscaleDense)
    std::fill(dscaleDense, dscaleDense + normSize, 0.0);
  if (dbiasDense)
    std::fill(dbiasDense, dbiasDense + normSize, 0.0);
  double *xhat = scratch.xhat;
  const float *pdy = dy.as<float>(), *px = x.as<float>();
  const double invN = normSize > 0 ? 1.0 / static_cast<double>(normSize) : 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float *dyRow = pdy + r * normSize;
    const float *xRow = px + r * normSize;
    const double m = mean.as<float>()[r];
    const double inv = invStd.as<float>()[r];
    // The two row sums, in double: they cancel to nearly zero for well-scaled inputs, and the
    // difference of large float sums would lose the result.
    double sumG = 0.0, sumGXhat = 0.0;
    for (int64_t i = 0; i < normSize; ++i) {
      const double h = (static_cast<double>(xRow[i]) - m) * inv;
      const double g = static_cast<double>(dyRow[i]) * scaleData[i];
      xhat[i] = h;
      sumG += g;
      sumGXhat += g * h;
    }
    if (dx.present()) {
      float *dxRow = dx.as<float>() + r * normSize;
      const double meanG = sumG * invN, meanGXhat = sumGXhat * invN;
      for (int64_t i = 0; i < normSize; ++i) {
        const double g = static_cast<double>(dyRow[i]) * scaleData[i];
        dxRow[i] = static_cast<float>(inv * (g - meanG - xhat[i] * meanGXhat));
      }
    }
    if (dscaleDense)
      for (int64_t i = 0; i < normSize; ++i)
        dscaleDense[i] += static_cast<double>(dyRow[i]) * xhat[i];
    if (dbiasDense)
      for (int64_t i = 0; i < normSize; ++i)
        dbiasDense[i] += dyRow[i];
  }
  if (dscale.present())
    sumOntoParam(dscaleDense, scaleLoop, dscale, scratch.acc);
  if (dbias.present())
    sumOntoParam(dbiasDense, dbiasLoop, dbias, scratch.acc);
  return Status::ok();
}

} // namespace shardc::runtime::cpu
