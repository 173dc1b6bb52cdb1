// softmax_cross_entropy_loss, nll_loss and their backwards on CUDA. Contracts and messages are
// the CPU kernels' (cpu/loss_operands.h); the arithmetic is theirs too (cpu/losses.cpp,
// cpu/gradients_losses.cpp): per-position loss -log_prob[n, t, d] * weight[t] in float, sums and
// the mean's denominator in double, the backward's coefficient in double.
//
// The reductions over positions (`sum`, `mean`, and the backward's denominator) run in one
// block that loops over every position: deterministic, no atomics, and cheap next to the
// softmax (a few thousand to a few hundred thousand targets).
//
// One difference the device forces: the CPU kernels return an error for a target outside
// [0, classes) (found while reading the data); a CUDA kernel returns once its work is queued,
// before the data is read, so here such a target makes its loss (and so a sum or mean), or its
// gradient positions, NaN instead.
#include "runtime/kernels/cpu/loss_operands.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/kernels/cuda/row_reduce.cuh"

#include <cmath>

namespace shardc::runtime::cuda {

// softmax.cu: log_softmax of [outer, dim, inner] along dim.
Status launchLogSoftmax(const char *kernel, const float *x, float *y, int64_t outer, int64_t dim,
                        int64_t inner, void *stream);

namespace {

// The LossSpec fields device code reads.
struct DeviceSpec {
  int64_t n = 0, c = 0, d = 0;
  int64_t classOffset = 0, classesWhole = 0;
  bool hasIgnoreIndex = false;
  int64_t ignoreIndex = 0;
  cpu::LossReduction reduction = cpu::LossReduction::Mean;
};

DeviceSpec deviceSpec(const cpu::LossSpec &s) {
  DeviceSpec d;
  d.n = s.n;
  d.c = s.c;
  d.d = s.d;
  d.classOffset = s.classOffset;
  d.classesWhole = s.classesWhole;
  d.hasIgnoreIndex = s.hasIgnoreIndex;
  d.ignoreIndex = s.ignoreIndex;
  d.reduction = s.reduction;
  return d;
}

constexpr int kReduceBlock = 1024;

// The class of target position k: -1 when ignored, -2 when out of range.
template <typename I>
__device__ inline int64_t targetClass(const I *target, int64_t k, const DeviceSpec &s) {
  const int64_t t = static_cast<int64_t>(target[k]);
  if (s.hasIgnoreIndex && t == s.ignoreIndex)
    return -1;
  if (t < 0 || t >= s.classesWhole)
    return -2;
  return t;
}

// Position k's loss (0 when ignored, NaN when out of range) and its weight in the mean's
// denominator (0 when ignored).
template <typename I>
__device__ inline void positionLoss(const float *logProb, const I *target, const float *weight,
                                    const DeviceSpec &s, int64_t k, float *loss, float *w) {
  const int64_t t = targetClass(target, k, s);
  *loss = 0.0f;
  *w = 0.0f;
  if (t == -1)
    return;
  if (t == -2) {
    *loss = NAN;
    return;
  }
  *w = weight ? weight[t] : 1.0f;
  const int64_t local = t - s.classOffset;
  const int64_t n = k / s.d, d = k % s.d;
  if (local >= 0 && local < s.c)
    *loss = -logProb[(n * s.c + local) * s.d + d] * *w;
}

template <typename I>
__global__ void lossPerPosition(const float *__restrict__ logProb, const I *__restrict__ target,
                                const float *__restrict__ weight, float *__restrict__ out,
                                DeviceSpec s) {
  SHARDC_GRID_STRIDE(k, s.n * s.d) {
    float loss, w;
    positionLoss(logProb, target, weight, s, k, &loss, &w);
    out[k] = loss;
  }
}

// One block: the sum (or mean) of every position's loss.
template <typename I>
__global__ void lossReduced(const float *__restrict__ logProb, const I *__restrict__ target,
                            const float *__restrict__ weight, float *__restrict__ out,
                            DeviceSpec s) {
  double lossSum = 0.0, weightSum = 0.0;
  for (int64_t k = threadIdx.x; k < s.n * s.d; k += blockDim.x) {
    float loss, w;
    positionLoss(logProb, target, weight, s, k, &loss, &w);
    lossSum += loss;
    weightSum += w;
  }
  lossSum = blockReduce(lossSum, SumOp(), 0.0);
  weightSum = blockReduce(weightSum, SumOp(), 0.0);
  if (threadIdx.x == 0) // 0 / 0 = NaN when everything is ignored, as on the CPU
    out[0] = static_cast<float>(s.reduction == cpu::LossReduction::Sum ? lossSum
                                                                       : lossSum / weightSum);
}

template <typename Fn> Status visitTarget(DType dtype, Fn &&fn) {
  if (dtype == program::I64)
    return fn(int64_t{});
  return fn(int32_t{}); // the checks admit only i64 and i32
}

Status weightedNll(const char *kernel, const float *logProb, const Tensor &target,
                   const Tensor &weight, const cpu::LossSpec &spec, const Tensor &loss,
                   cudaStream_t stream) {
  const DeviceSpec s = deviceSpec(spec);
  const int64_t positions = s.n * s.d;
  const float *w = weight.present() ? weight.as<float>() : nullptr;
  return visitTarget(target.dtype, [&](auto tag) {
    using I = decltype(tag);
    if (spec.reduction == cpu::LossReduction::None) {
      if (positions == 0)
        return Status::ok();
      lossPerPosition<I><<<gridFor(positions), kBlock, 0, stream>>>(logProb, target.as<I>(), w,
                                                                    loss.as<float>(), s);
    } else {
      lossReduced<I><<<1, kReduceBlock, 0, stream>>>(logProb, target.as<I>(), w,
                                                     loss.as<float>(), s);
    }
    return launchStatus(kernel);
  });
}

// ---- backwards ---------------------------------------------------------------------------------

// One block: the coefficient shared by every position under `sum` (dloss) or `mean`
// (dloss / the summed weights of the non-ignored positions), in double.
template <typename I>
__global__ void gradScalar(const float *__restrict__ dloss, const I *__restrict__ target,
                           const float *__restrict__ weight, double *__restrict__ scalar,
                           DeviceSpec s) {
  double weightSum = 0.0;
  for (int64_t k = threadIdx.x; k < s.n * s.d; k += blockDim.x) {
    const int64_t t = targetClass(target, k, s);
    if (t >= 0)
      weightSum += weight ? weight[t] : 1.0f;
  }
  weightSum = blockReduce(weightSum, SumOp(), 0.0);
  if (threadIdx.x == 0)
    *scalar = s.reduction == cpu::LossReduction::Sum ? static_cast<double>(dloss[0])
                                                     : static_cast<double>(dloss[0]) / weightSum;
}

// Every element (n, c, d) of the gradient: 0 where the position is ignored, NaN where its
// target is out of range, else (exp(log_prob) - [c == t]) * coeff (softmax cross entropy) or
// -coeff at c == t and 0 elsewhere (nll).
template <typename I, bool CrossEntropy>
__global__ void lossGrad(const float *__restrict__ dloss, const float *__restrict__ logProb,
                         const I *__restrict__ target, const float *__restrict__ weight,
                         const double *__restrict__ scalar, float *__restrict__ out,
                         DeviceSpec s) {
  SHARDC_GRID_STRIDE(i, s.n * s.c * s.d) {
    const int64_t d = i % s.d, c = (i / s.d) % s.c, n = i / (s.d * s.c);
    const int64_t k = n * s.d + d;
    const int64_t t = targetClass(target, k, s);
    if (t == -1) {
      out[i] = 0.0f;
      continue;
    }
    if (t == -2) {
      out[i] = NAN;
      continue;
    }
    const double g = s.reduction == cpu::LossReduction::None ? static_cast<double>(dloss[k])
                                                             : *scalar;
    const double w = weight ? static_cast<double>(weight[t]) : 1.0;
    const double coeff = w * g;
    const bool isTarget = c == t - s.classOffset;
    if (CrossEntropy) {
      const double p = exp(static_cast<double>(logProb[i]));
      out[i] = static_cast<float>((p - (isTarget ? 1.0 : 0.0)) * coeff);
    } else {
      out[i] = isTarget ? static_cast<float>(-coeff) : 0.0f;
    }
  }
}

Status takeScalar(const char *kernel, cpu::Workspace &workspace, double **scalar) {
  return workspace.take(kernel, 1, scalar);
}

template <bool CrossEntropy> Status lossGradCommon(const char *kernel, KernelArgs &args) {
  cpu::LossSpec spec;
  SHARDC_RETURN_IF_ERROR(cpu::checkLossGradOperands(kernel, args, CrossEntropy, &spec));
  cpu::Workspace workspace(args);
  double *scalar = nullptr;
  SHARDC_RETURN_IF_ERROR(takeScalar(kernel, workspace, &scalar));
  const size_t targetIndex = CrossEntropy ? 2 : 1;
  const Tensor &dloss = args.inputs[0], &target = args.inputs[targetIndex];
  const Tensor absent;
  const Tensor &weight =
      args.inputs.size() > targetIndex + 1 ? args.inputs[targetIndex + 1] : absent;
  const float *logProb = CrossEntropy ? args.inputs[1].as<float>() : nullptr;
  const float *w = weight.present() ? weight.as<float>() : nullptr;
  const DeviceSpec s = deviceSpec(spec);
  const int64_t elements = s.n * s.c * s.d;
  const cudaStream_t stream = streamOf(args);
  return visitTarget(target.dtype, [&](auto tag) {
    using I = decltype(tag);
    if (elements == 0)
      return Status::ok();
    if (spec.reduction != cpu::LossReduction::None) {
      gradScalar<I><<<1, kReduceBlock, 0, stream>>>(dloss.as<float>(), target.as<I>(), w,
                                                    scalar, s);
      SHARDC_RETURN_IF_ERROR(launchStatus(kernel));
    }
    lossGrad<I, CrossEntropy><<<gridFor(elements), kBlock, 0, stream>>>(
        dloss.as<float>(), logProb, target.as<I>(), w, scalar, args.outputs[0].as<float>(), s);
    return launchStatus(kernel);
  });
}

template <bool CrossEntropy>
Status lossGradWorkspaceCommon(const char *kernel, const KernelArgs &args, uint64_t *bytes) {
  cpu::LossSpec spec;
  SHARDC_RETURN_IF_ERROR(cpu::checkLossGradOperands(kernel, args, CrossEntropy, &spec));
  double *scalar = nullptr;
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    return takeScalar(kernel, workspace, &scalar);
  });
}

constexpr const char *kCrossEntropy = "softmax_cross_entropy_loss";

// softmax_cross_entropy_loss's workspace: log_prob when it is not an output.
Status takeLogProb(cpu::Workspace &workspace, const cpu::CrossEntropyOperands &ops,
                   float **logProb) {
  if (ops.logProbOut->present())
    return Status::ok();
  return workspace.take(kCrossEntropy, ops.scores->numel(), logProb);
}

} // namespace

Status softmaxCrossEntropyLossWorkspace(const KernelArgs &args, uint64_t *bytes) {
  cpu::CrossEntropyOperands ops;
  SHARDC_RETURN_IF_ERROR(cpu::checkCrossEntropyOperands(args, &ops));
  float *logProb = nullptr;
  return cpu::measureWorkspace(
      bytes, [&](cpu::Workspace &workspace) { return takeLogProb(workspace, ops, &logProb); });
}

Status softmaxCrossEntropyLossKernel(KernelArgs &args) {
  cpu::CrossEntropyOperands ops;
  SHARDC_RETURN_IF_ERROR(cpu::checkCrossEntropyOperands(args, &ops));
  cpu::Workspace workspace(args);
  float *logProb = nullptr;
  SHARDC_RETURN_IF_ERROR(takeLogProb(workspace, ops, &logProb));
  if (ops.logProbOut->present())
    logProb = ops.logProbOut->as<float>();
  const cpu::LossSpec &spec = ops.spec;
  SHARDC_RETURN_IF_ERROR(launchLogSoftmax(kCrossEntropy, ops.scores->as<float>(), logProb, spec.n,
                                          spec.c, spec.d, args.stream));
  return weightedNll(kCrossEntropy, logProb, *ops.labels, *ops.weights, spec, *ops.loss,
                     streamOf(args));
}

Status nllLossKernel(KernelArgs &args) {
  cpu::LossSpec spec;
  SHARDC_RETURN_IF_ERROR(cpu::checkNllLossOperands(args, &spec));
  const Tensor absent;
  const Tensor &weight = args.inputs.size() > 2 ? args.inputs[2] : absent;
  return weightedNll("nll_loss", args.inputs[0].as<float>(), args.inputs[1], weight, spec,
                     args.outputs[0], streamOf(args));
}

Status softmaxCrossEntropyLossGradKernel(KernelArgs &args) {
  return lossGradCommon<true>("softmax_cross_entropy_loss_grad", args);
}
Status nllLossGradKernel(KernelArgs &args) { return lossGradCommon<false>("nll_loss_grad", args); }

Status softmaxCrossEntropyLossGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return lossGradWorkspaceCommon<true>("softmax_cross_entropy_loss_grad", args, bytes);
}
Status nllLossGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return lossGradWorkspaceCommon<false>("nll_loss_grad", args, bytes);
}

} // namespace shardc::runtime::cuda
