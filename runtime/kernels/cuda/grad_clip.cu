// global_norm and scale_by_clip on the GPU, bit-identical to the CPU kernels
// (cpu/grad_clip.cpp), which reproduce torch's float32 clip_grad_norm_. Every rounding is the
// CPU's: the same float32 operations in the same order, with the fused multiply-adds exactly
// where the CPU calls std::fma (__fmaf_rn) and nowhere else (this file is built with
// -fmad=false, as the CPU file with -ffp-contract=off), a correctly rounded square root and
// division. Contracts and error messages are the CPU's (cpu/grad_checks.h).
#include "runtime/kernels/cpu/grad_checks.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"

#include <algorithm>

namespace shardc::runtime::cuda {

namespace {

// The CPU's 8 lanes: lane j accumulates elements j, j+8, ... of the leading multiple of 8.
constexpr int kLanes = 8;

// torchSumOfSquares then sqrt (the CPU's torchNorm2), by the block's kLanes threads: each lane
// is one thread's sequential chain of fused multiply-adds, as on the CPU; thread 0 then folds
// the lanes left to right and adds the tail in the CPU's order. The result is in thread 0.
__device__ float blockNorm2(const float *__restrict__ x, int64_t n) {
  __shared__ float lanes[kLanes];
  const int j = static_cast<int>(threadIdx.x);
  const int64_t body = n - n % kLanes;
  float lane = 0.0f;
  for (int64_t d = j; d < body; d += kLanes)
    lane = __fmaf_rn(x[d], x[d], lane);
  lanes[j] = lane;
  __syncthreads();
  float sum = 0.0f;
  if (j == 0) {
    sum = lanes[0];
    for (int k = 1; k < kLanes; ++k)
      sum = __fadd_rn(sum, lanes[k]);
    int64_t d = body;
    if (n - d >= 4) {
      for (int k = 0; k < 4; ++k, ++d) {
        const float square = __fmul_rn(x[d], x[d]);
        sum = __fadd_rn(sum, square);
      }
    }
    for (; d < n; ++d)
      sum = __fmaf_rn(x[d], x[d], sum);
    sum = __fsqrt_rn(sum);
  }
  return sum;
}

// Up to kChunk inputs per launch, passed by value (about 1 KiB of kernel parameters).
constexpr int kChunk = 64;
struct NormChunk {
  const float *x[kChunk];
  int64_t n[kChunk];
};

// One block of kLanes threads per input: norms[b] = torch.norm(input b, 2).
__global__ void inputNormsImpl(NormChunk chunk, float *__restrict__ norms) {
  const int b = static_cast<int>(blockIdx.x);
  const float norm = blockNorm2(chunk.x[b], chunk.n[b]);
  if (threadIdx.x == 0)
    norms[b] = norm;
}

// The norm of the stacked norms, in input order.
__global__ void totalNormImpl(const float *__restrict__ norms, int64_t count,
                              float *__restrict__ out) {
  const float norm = blockNorm2(norms, count);
  if (threadIdx.x == 0)
    out[0] = norm;
}

// The workspace: the norm of each input, stacked (as the CPU kernel's).
Status takeNorms(cpu::Workspace &workspace, const KernelArgs &args, float **norms) {
  return workspace.take("global_norm", static_cast<int64_t>(args.inputs.size()), norms);
}

// The clip coefficient from the norm read on the device, as the CPU computes it on the host:
// (1 / (total_norm + float(1e-6))) * max_norm, clamped to 1 keeping NaN.
__global__ void scaleByClipImpl(const float *__restrict__ grad, const float *__restrict__ norm,
                                float maxNorm, float *__restrict__ out, int64_t n) {
  const float shifted = __fadd_rn(norm[0], static_cast<float>(1e-6));
  const float clipCoef = __fmul_rn(__fdiv_rn(1.0f, shifted), maxNorm);
  const float coef = isnan(clipCoef) ? clipCoef : fminf(clipCoef, 1.0f);
  SHARDC_GRID_STRIDE(i, n) { out[i] = __fmul_rn(grad[i], coef); }
}

} // namespace

Status globalNormKernel(KernelArgs &args) {
  const char *kernel = "global_norm";
  SHARDC_RETURN_IF_ERROR(cpu::checkGlobalNorm(args));
  cpu::Workspace workspace(args);
  float *norms = nullptr; // device memory
  SHARDC_RETURN_IF_ERROR(takeNorms(workspace, args, &norms));
  const int64_t count = static_cast<int64_t>(args.inputs.size());
  for (int64_t first = 0; first < count; first += kChunk) {
    const int64_t blocks = std::min<int64_t>(kChunk, count - first);
    NormChunk chunk = {};
    for (int64_t b = 0; b < blocks; ++b) {
      chunk.x[b] = args.inputs[static_cast<size_t>(first + b)].as<float>();
      chunk.n[b] = args.inputs[static_cast<size_t>(first + b)].numel();
    }
    inputNormsImpl<<<static_cast<unsigned>(blocks), kLanes, 0, streamOf(args)>>>(chunk,
                                                                                 norms + first);
    SHARDC_RETURN_IF_ERROR(launchStatus(kernel));
  }
  totalNormImpl<<<1, kLanes, 0, streamOf(args)>>>(norms, count, args.outputs[0].as<float>());
  return launchStatus(kernel);
}

Status globalNormWorkspace(const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(cpu::checkGlobalNorm(args));
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    float *norms = nullptr;
    return takeNorms(workspace, args, &norms);
  });
}

Status scaleByClipKernel(KernelArgs &args) {
  float maxNorm = 0;
  SHARDC_RETURN_IF_ERROR(cpu::checkScaleByClip(args, &maxNorm));
  const Tensor &grad = args.inputs[0], &norm = args.inputs[1], &out = args.outputs[0];
  const int64_t n = grad.numel();
  if (n == 0)
    return Status::ok();
  scaleByClipImpl<<<gridFor(n), kBlock, 0, streamOf(args)>>>(grad.as<float>(), norm.as<float>(),
                                                             maxNorm, out.as<float>(), n);
  return launchStatus("scale_by_clip");
}

} // namespace shardc::runtime::cuda
