// adamw_update and sgd_update on the GPU, bit-identical to the CPU kernels (cpu/optimizers.cpp,
// which reproduce torch 1.13's float32 roundings): the same expressions in the same order, with
// a fused multiply-add (__fmaf_rn) exactly where the CPU calls std::fma and explicitly rounded
// single operations (__fmul_rn, __fadd_rn, __fdiv_rn, __fsqrt_rn) everywhere else, so nvcc can
// neither contract nor approximate them. This file is also compiled with -fmad=false
// (runtime/kernels/CMakeLists.txt), which covers the double-precision scalar arithmetic.
//
// The checks are the CPU kernels' (cpu/optimizer_checks.h). The step, lr and skip scalars live
// in device memory, so each block reads them there (thread 0) rather than the host reading them
// back, which would stall the stream every step. Two differences follow, both documented:
// * a step < 1, an error on the CPU, cannot be reported from the device and is not checked here
//   (the executor's step counter starts at 1; AdamW's bias correction is then 0 and the update
//   inf/NaN, SGD treats it as a later step);
// * the bias corrections use the device's double pow (within 2 ulp, where glibc's is correctly
//   rounded); a difference survives the rounding to float only for values within an ulp of a
//   float rounding boundary (never seen in the tests).
#include "runtime/kernels/cpu/optimizer_checks.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"

namespace shardc::runtime::cuda {

namespace {

// The hyperparameters that do not depend on step or lr, computed on the host as the CPU does.
struct AdamwConstants {
  double beta1, beta2, weightDecay;
  float beta1F, beta2F, epsF, oneMinusBeta1, oneMinusBeta2;
};

__global__ void adamwImpl(const float *p, const float *__restrict__ g, const float *m,
                          const float *v, const int64_t *__restrict__ stepPtr,
                          const float *__restrict__ lrPtr, const float *__restrict__ skipPtr,
                          float *pOut, float *mOut, float *vOut, int64_t n, AdamwConstants c) {
  // p/m/v may be pOut/mOut/vOut (updated in place): no __restrict__ on those.
  __shared__ float decay, bc2SqrtF, negStepSize;
  __shared__ bool skip;
  if (threadIdx.x == 0) {
    // The Python-side scalars of _single_tensor_adamw, in double, as the CPU kernel.
    const double lr = static_cast<double>(*lrPtr);
    const double stepD = static_cast<double>(*stepPtr);
    const double biasCorrection1 = 1.0 - pow(c.beta1, stepD);
    const double biasCorrection2 = 1.0 - pow(c.beta2, stepD);
    const double stepSize = lr / biasCorrection1;
    const double biasCorrection2Sqrt = sqrt(biasCorrection2);
    decay = static_cast<float>(1.0 - lr * c.weightDecay);
    bc2SqrtF = static_cast<float>(biasCorrection2Sqrt);
    negStepSize = static_cast<float>(-stepSize);
    skip = skipPtr != nullptr && *skipPtr != 0.0f;
  }
  __syncthreads();
  SHARDC_GRID_STRIDE(i, n) {
    const float pi = p[i], gi = g[i], m0 = m[i], v0 = v[i];
    if (skip) { // every output keeps its input's value
      pOut[i] = pi;
      mOut[i] = m0;
      vOut[i] = v0;
      continue;
    }
    const float decayed = __fmul_rn(pi, decay);
    const float mi = __fmaf_rn(c.oneMinusBeta1, gi, __fmul_rn(m0, c.beta1F));
    const float vi = __fmaf_rn(__fmul_rn(c.oneMinusBeta2, gi), gi, __fmul_rn(v0, c.beta2F));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2SqrtF), c.epsF);
    pOut[i] = __fadd_rn(decayed, __fdiv_rn(__fmul_rn(negStepSize, mi), denom));
    mOut[i] = mi;
    vOut[i] = vi;
  }
}

struct SgdConstants {
  float momentumF, weightDecayF, bufferScale;
  bool decay, useMomentum, nesterov;
};

__global__ void sgdImpl(const float *p, const float *__restrict__ g, const float *b,
                        const int64_t *__restrict__ stepPtr, const float *__restrict__ lrPtr,
                        const float *__restrict__ skipPtr, float *pOut, float *bOut, int64_t n,
                        SgdConstants c) {
  // p/b may be pOut/bOut (updated in place): no __restrict__ on those.
  const bool skip = skipPtr != nullptr && *skipPtr != 0.0f;
  const bool firstStep = *stepPtr == 1; // torch: the buffer does not exist yet, buf = clone(d_p)
  const float negLr = -*lrPtr;          // alpha=-lr: exact in f32
  SHARDC_GRID_STRIDE(i, n) {
    const float pi = p[i], bi = b[i];
    if (skip) {
      pOut[i] = pi;
      bOut[i] = bi;
      continue;
    }
    float dp = g[i];
    if (c.decay)
      dp = __fmaf_rn(c.weightDecayF, pi, dp); // d_p.add(param, alpha=weight_decay)
    if (c.useMomentum) {
      const float buf = firstStep ? dp : __fmaf_rn(c.bufferScale, dp, __fmul_rn(bi, c.momentumF));
      bOut[i] = buf;
      dp = c.nesterov ? __fmaf_rn(c.momentumF, buf, dp) : buf;
    } else {
      bOut[i] = bi; // no momentum: the buffer passes through unchanged
    }
    pOut[i] = __fmaf_rn(negLr, dp, pi); // param.add_(d_p, alpha=-lr)
  }
}

const float *skipOf(const KernelArgs &args, size_t index) {
  return cpu::hasSkip(args, index) ? args.inputs[index].as<float>() : nullptr;
}

} // namespace

Status adamwUpdateKernel(KernelArgs &args) {
  cpu::AdamwAttrs attrs;
  SHARDC_RETURN_IF_ERROR(cpu::checkAdamw(args, &attrs));
  const int64_t n = args.inputs[0].numel();
  if (n == 0)
    return Status::ok();
  AdamwConstants c;
  c.beta1 = attrs.beta1;
  c.beta2 = attrs.beta2;
  c.weightDecay = attrs.weightDecay;
  // Python scalars meeting a float32 tensor become float32.
  c.beta1F = static_cast<float>(attrs.beta1);
  c.beta2F = static_cast<float>(attrs.beta2);
  c.epsF = static_cast<float>(attrs.eps);
  c.oneMinusBeta1 = static_cast<float>(1.0 - attrs.beta1);
  c.oneMinusBeta2 = static_cast<float>(1.0 - attrs.beta2);
  adamwImpl<<<gridFor(n), kBlock, 0, streamOf(args)>>>(
      args.inputs[0].as<float>(), args.inputs[1].as<float>(), args.inputs[2].as<float>(),
      args.inputs[3].as<float>(), args.inputs[4].as<int64_t>(), args.inputs[5].as<float>(),
      skipOf(args, 6), args.outputs[0].as<float>(), args.outputs[1].as<float>(),
      args.outputs[2].as<float>(), n, c);
  return launchStatus("adamw_update");
}

Status sgdUpdateKernel(KernelArgs &args) {
  cpu::SgdAttrs attrs;
  SHARDC_RETURN_IF_ERROR(cpu::checkSgd(args, &attrs));
  const int64_t n = args.inputs[0].numel();
  if (n == 0)
    return Status::ok();
  SgdConstants c;
  c.momentumF = static_cast<float>(attrs.momentum);
  c.weightDecayF = static_cast<float>(attrs.weightDecay);
  c.bufferScale = static_cast<float>(1.0 - attrs.dampening);
  // torch tests these as Python floats, so a zero skips the term entirely (no 0 * inf = NaN).
  c.decay = attrs.weightDecay != 0.0;
  c.useMomentum = attrs.momentum != 0.0;
  c.nesterov = attrs.nesterov != 0;
  sgdImpl<<<gridFor(n), kBlock, 0, streamOf(args)>>>(
      args.inputs[0].as<float>(), args.inputs[1].as<float>(), args.inputs[2].as<float>(),
      args.inputs[3].as<int64_t>(), args.inputs[4].as<float>(), skipOf(args, 5),
      args.outputs[0].as<float>(), args.outputs[1].as<float>(), n, c);
  return launchStatus("sgd_update");
}

} // namespace shardc::runtime::cuda
