// gelu_grad, clip and reduce_max_grad on the GPU. Contracts and error messages are the CPU
// kernels' (cpu/grad_checks.h); the arithmetic mirrors theirs: clip and reduce_max_grad are
// bit-identical (comparisons, one correctly rounded division), gelu_grad is within a few ulp
// (CUDA's erff/expf against the host libm's).
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/grad_checks.h"
#include "runtime/kernels/cpu/workspace.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"

#include <string>
#include <vector>

namespace shardc::runtime::cuda {

namespace {

// ---- gelu_grad: the CPU's formulas (cpu/gradients_gelu.cpp), limits included ----------------

struct GeluErfDerivative {
  __device__ float operator()(float v) const {
    constexpr float kInvSqrt2 = 0.70710678118654752440f;
    constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    if (!(fabsf(v) < 40.0f))
      return v != v ? v : cdf;
    return cdf + v * expf(-0.5f * v * v) * kInvSqrt2Pi;
  }
};

struct GeluTanhDerivative {
  __device__ float operator()(float v) const {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    constexpr float kCubic = 0.044715f;
    if (!(fabsf(v) < 40.0f))
      return v != v ? v : (v > 0 ? 1.0f : 0.0f);
    const float u2 = 2.0f * kSqrt2OverPi * (v + kCubic * v * v * v);
    const float s = 1.0f / (1.0f + expf(-u2));
    return s + v * 2.0f * s * (1.0f - s) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
  }
};

template <typename Derivative>
__global__ void geluGradImpl(const float *__restrict__ dy, const float *__restrict__ x,
                             float *__restrict__ dx, int64_t n, Derivative derivative) {
  SHARDC_GRID_STRIDE(i, n) { dx[i] = dy[i] * derivative(x[i]); }
}

template <typename Derivative> Status launchGeluGrad(KernelArgs &args, Derivative derivative) {
  const int64_t n = args.inputs[1].numel();
  if (n == 0)
    return Status::ok();
  geluGradImpl<<<gridFor(n), kBlock, 0, streamOf(args)>>>(
      args.inputs[0].as<float>(), args.inputs[1].as<float>(), args.outputs[0].as<float>(), n,
      derivative);
  return launchStatus("gelu_grad");
}

// ---- clip: the bounds are read on the device (null where absent) -----------------------------

template <typename T>
__global__ void clipImpl(const T *__restrict__ x, T *__restrict__ y, int64_t n, const T *lo,
                         const T *hi) {
  const bool hasLo = lo != nullptr, hasHi = hi != nullptr;
  const T vlo = hasLo ? *lo : T(0);
  const T vhi = hasHi ? *hi : T(0);
  SHARDC_GRID_STRIDE(i, n) {
    // min(max(x, lo), hi) as the CPU writes it: a NaN element stays NaN, lo > hi gives hi.
    T v = x[i];
    if (hasLo && v < vlo)
      v = vlo;
    if (hasHi && v > vhi)
      v = vhi;
    y[i] = v;
  }
}

// ---- reduce_max_grad -------------------------------------------------------------------------

// True where x attains the maximum y (both NaN counts as attaining it), as the CPU.
__device__ inline bool isMax(float x, float y) { return x == y || (x != x && y != y); }

// The walk (cpu::planReductionWalk) visits x in memory order, so x's offset is i; operand 0 is
// y's offset. Integer atomics: the counts do not depend on the order the threads add them in.
__global__ void countTiesImpl(const float *__restrict__ x, const float *__restrict__ y,
                              unsigned long long *ties, DeviceLoop loop) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t at[1];
    loopOffsets<1>(loop, i, at);
    if (isMax(x[i], y[at[0]]))
      atomicAdd(ties + at[0], 1ull);
  }
}

__global__ void shareMaxGradImpl(const float *__restrict__ dy, const float *__restrict__ x,
                                 const float *__restrict__ y, const int64_t *__restrict__ ties,
                                 float *__restrict__ dx, DeviceLoop loop) {
  SHARDC_GRID_STRIDE(i, loop.numel) {
    int64_t at[1];
    loopOffsets<1>(loop, i, at);
    const int64_t k = at[0];
    // The count converts with round-to-nearest and the division is IEEE: the CPU's roundings.
    dx[i] = isMax(x[i], y[k]) ? __fdiv_rn(dy[k], static_cast<float>(ties[k])) : 0.0f;
  }
}

// The workspace: the number of tied positions of each maximum (as the CPU kernel's).
Status takeTies(cpu::Workspace &workspace, const Tensor &y, int64_t **ties) {
  return workspace.take("reduce_max_grad", y.numel(), ties);
}

} // namespace

Status geluGradKernel(KernelArgs &args) {
  std::string approximate;
  SHARDC_RETURN_IF_ERROR(cpu::checkGeluGrad(args, &approximate));
  if (approximate == "none")
    return launchGeluGrad(args, GeluErfDerivative{});
  if (approximate == "tanh")
    return launchGeluGrad(args, GeluTanhDerivative{});
  return cpu::geluGradApproximateError(approximate);
}

Status clipKernel(KernelArgs &args) {
  const Tensor *lo = nullptr, *hi = nullptr;
  SHARDC_RETURN_IF_ERROR(cpu::checkClip(args, &lo, &hi));
  const Tensor &x = args.inputs[0], &y = args.outputs[0];
  const int64_t n = x.numel();
  return cpu::visitNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0)
      return Status::ok();
    clipImpl<T><<<gridFor(n), kBlock, 0, streamOf(args)>>>(
        x.as<T>(), y.as<T>(), n, lo ? lo->as<T>() : nullptr, hi ? hi->as<T>() : nullptr);
    return launchStatus("clip");
  });
}

Status reduceMaxGradKernel(KernelArgs &args) {
  const char *kernel = "reduce_max_grad";
  std::vector<bool> reduced;
  SHARDC_RETURN_IF_ERROR(cpu::checkReduceMaxGrad(args, &reduced));
  const Tensor &dy = args.inputs[0], &x = args.inputs[1], &y = args.inputs[2];
  const Tensor &dx = args.outputs[0];
  cpu::Workspace workspace(args);
  int64_t *ties = nullptr; // device memory
  SHARDC_RETURN_IF_ERROR(takeTies(workspace, y, &ties));
  DeviceLoop loop;
  SHARDC_RETURN_IF_ERROR(toDeviceLoop(kernel, cpu::planReductionWalk(x.shape, reduced), &loop));
  if (x.numel() == 0)
    return Status::ok();
  SHARDC_RETURN_IF_ERROR(
      cudaStatus(kernel, "zeroing the tie counts",
                 cudaMemsetAsync(ties, 0, y.numel() * sizeof(int64_t), streamOf(args))));
  static_assert(sizeof(unsigned long long) == sizeof(int64_t));
  countTiesImpl<<<gridFor(loop.numel), kBlock, 0, streamOf(args)>>>(
      x.as<float>(), y.as<float>(), reinterpret_cast<unsigned long long *>(ties), loop);
  SHARDC_RETURN_IF_ERROR(launchStatus(kernel));
  shareMaxGradImpl<<<gridFor(loop.numel), kBlock, 0, streamOf(args)>>>(
      dy.as<float>(), x.as<float>(), y.as<float>(), ties, dx.as<float>(), loop);
  return launchStatus(kernel);
}

Status reduceMaxGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  std::vector<bool> reduced;
  SHARDC_RETURN_IF_ERROR(cpu::checkReduceMaxGrad(args, &reduced));
  return cpu::measureWorkspace(bytes, [&](cpu::Workspace &workspace) {
    int64_t *ties = nullptr;
    return takeTies(workspace, args.inputs[2], &ties);
  });
}

} // namespace shardc::runtime::cuda
