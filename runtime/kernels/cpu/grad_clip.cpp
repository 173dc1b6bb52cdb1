// global_norm and scale_by_clip: torch.nn.utils.clip_grad_norm_ (torch 1.13, norm_type=2) split
// into the norm over all gradients and the per-gradient scaling, bit for bit as torch computes
// them on CPU, so that clipped training matches PyTorch.
//
// torch computes total_norm = torch.norm(torch.stack([torch.norm(g, 2) for g in grads]), 2):
// a float32 2-norm of every gradient, then the float32 2-norm of those norms. Each torch.norm of
// a contiguous f32 tensor takes the vectorised fast path of norm_kernel_tensor_iterator_impl
// (aten/src/ATen/native/cpu/ReduceOpsKernel.cpp), whose summation order torchSumOfSquares below
// follows. The clip coefficient is `max_norm / (total_norm + 1e-6)` on a 0-d float32 tensor,
// which Python evaluates as `(total_norm + 1e-6).reciprocal() * max_norm`, then clamped to 1.
// This file is compiled with -ffp-contract=off: only the explicit std::fma calls may fuse.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/grad_checks.h"
#include "runtime/kernels/cpu/workspace.h"

#include <cmath>
#include <string>

namespace shardc::runtime::cpu {

namespace {

// Sum of x[i]^2 in float32, in the order of torch 1.13's 2-norm fast path as Debian's AVX2 build
// executes it (derived by comparing with torch.norm on sizes 1 to 100003; the ctest
// optimizer_torch_reference keeps checking it):
// * 8 lanes; lane j accumulates elements j, j+8, ... of the leading multiple of 8 elements with
//   a fused multiply-add (the compiler fuses `acc_vec += data_vec * data_vec`);
// * the lanes are folded left to right into lane 0;
// * the remaining n % 8 elements are added in order, those in a leading group of 4 as a separate
//   square and add (the compiler vectorised those squares), the last n % 4 with a fused
//   multiply-add.
float torchSumOfSquares(const float *x, int64_t n) {
  constexpr int64_t kLanes = 8;
  float lanes[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes)
    for (int64_t j = 0; j < kLanes; ++j)
      lanes[j] = std::fma(x[d + j], x[d + j], lanes[j]);
  float sum = lanes[0];
  for (int64_t j = 1; j < kLanes; ++j)
    sum = sum + lanes[j];
  if (n - d >= 4) {
    for (int64_t k = 0; k < 4; ++k, ++d) {
      const float square = x[d] * x[d];
      sum = sum + square;
    }
  }
  for (; d < n; ++d)
    sum = std::fma(x[d], x[d], sum);
  return sum;
}

// torch.norm(x, 2) of a float32 tensor: the float32 square root of the sum above.
float torchNorm2(const float *x, int64_t n) { return std::sqrt(torchSumOfSquares(x, n)); }

// The workspace of global_norm: the norm of each input, stacked.
Status takeNorms(Workspace &workspace, const KernelArgs &args, float **norms) {
  return workspace.take("global_norm", static_cast<int64_t>(args.inputs.size()), norms);
}

} // namespace

Status globalNormKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkGlobalNorm(args));
  const Tensor &out = args.outputs[0];
  // torch.stack of the per-gradient norms, then their norm, in input order.
  Workspace workspace(args);
  float *norms = nullptr;
  SHARDC_RETURN_IF_ERROR(takeNorms(workspace, args, &norms));
  const int64_t count = static_cast<int64_t>(args.inputs.size());
  for (int64_t i = 0; i < count; ++i)
    norms[i] = torchNorm2(args.inputs[i].as<float>(), args.inputs[i].numel());
  out.as<float>()[0] = torchNorm2(norms, count);
  return Status::ok();
}

Status globalNormWorkspace(const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(checkOperands("global_norm", args, Arity::atLeast(1), Arity::exactly(1)));
  float *norms = nullptr;
  return measureWorkspace(bytes,
                          [&](Workspace &workspace) { return takeNorms(workspace, args, &norms); });
}

Status scaleByClipKernel(KernelArgs &args) {
  float maxNorm = 0;
  SHARDC_RETURN_IF_ERROR(checkScaleByClip(args, &maxNorm));
  const Tensor &grad = args.inputs[0], &totalNorm = args.inputs[1], &out = args.outputs[0];

  // The Python literal 1e-6 becomes a float32 when added to the 0-d float32 tensor.
  const float shifted = totalNorm.as<float>()[0] + static_cast<float>(1e-6);
  const float clipCoef = (1.0f / shifted) * maxNorm; // reciprocal() * max_norm
  // torch.clamp(max=1.0) keeps NaN (a NaN or infinite norm poisons the gradients, as in torch).
  const float coef = std::isnan(clipCoef) ? clipCoef : std::fmin(clipCoef, 1.0f);
  const float *g = grad.as<float>();
  float *y = out.as<float>();
  const int64_t n = grad.numel();
  for (int64_t i = 0; i < n; ++i)
    y[i] = g[i] * coef; // g.mul_(clip_coef_clamped)
  return Status::ok();
}

} // namespace shardc::runtime::cpu
