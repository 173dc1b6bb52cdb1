// The f32 function of every elementwise CUDA kernel that `fused_elementwise` can run as a step,
// written once, as cpu/elementwise_functions.h is for the CPU: elementwise.cu's f32 paths and
// fused_elementwise.cu's steps call these, so a fused chain computes what the chain of CUDA
// kernels computes. CUDA's libm where the CPU calls its own (results within a few ulp of the
// CPU's; sigmoid through expf, not the CPU's vectorised exp). A step's own addition,
// subtraction or multiplication, and a multiplication that ends a step, is an _rn intrinsic
// (the same IEEE operation): it is never contracted into a multiply-add with a neighbouring
// step, which would round differently from the unfused kernels, where each result is stored.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace shardc::runtime::cuda {

// ---- unary ----------------------------------------------------------------------------------

__device__ inline float negF32(float v) { return -v; }
__device__ inline float absF32(float v) { return fabsf(v); }
// NaN propagates (the comparison is false).
__device__ inline float reluF32(float v) { return v < 0.0f ? 0.0f : v; }
__device__ inline float sqrtF32(float v) { return sqrtf(v); }
__device__ inline float reciprocalF32(float v) { return 1.0f / v; }
__device__ inline float expF32(float v) { return expf(v); }
__device__ inline float logF32(float v) { return logf(v); }
__device__ inline float tanhF32(float v) { return tanhf(v); }
__device__ inline float erfF32(float v) { return erff(v); }
__device__ inline float sinF32(float v) { return sinf(v); }
__device__ inline float cosF32(float v) { return cosf(v); }

// exp of -|x| never overflows.
__device__ inline float sigmoidF32(float v) {
  const float e = expf(-fabsf(v));
  const float inv = 1.0f / (1.0f + e);
  return v >= 0.0f ? inv : __fmul_rn(e, inv);
}

// The CPU kernel's form: max(x, 0) + log1p(exp(-|x|)) never overflows.
__device__ inline float softplusF32(float v) { return fmaxf(v, 0.0f) + log1pf(expf(-fabsf(v))); }

// The f32 value of the bf16 (f16) `cast` rounds v to (nearest, ties to even).
__device__ inline float roundBf16F32(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
__device__ inline float roundF16F32(float v) { return __half2float(__float2half_rn(v)); }

// ---- binary ---------------------------------------------------------------------------------

__device__ inline float addF32(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float subF32(float a, float b) { return __fsub_rn(a, b); }
__device__ inline float mulF32(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float divF32(float a, float b) { return a / b; }

// In double, as the CPU kernel: a float's square is exact there.
__device__ inline float powF32(float a, float b) {
  return static_cast<float>(pow(static_cast<double>(a), static_cast<double>(b)));
}

// NaN in either operand propagates: if `a` is NaN it is returned, if `b` is, `a > b` is false.
__device__ inline float maxF32(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ inline float minF32(float a, float b) { return (a < b || a != a) ? a : b; }

} // namespace shardc::runtime::cuda
