// The contracts of gelu_grad, clip, global_norm, scale_by_clip and reduce_max_grad, written once
// for every device: the CPU and CUDA kernels of a name call the same check, which reads only
// dtypes, shapes and attributes (never tensor data), so both give the same error messages.
#pragma once

#include "runtime/kernels/kernel.h"

#include <string>
#include <vector>

namespace shardc::runtime::cpu {

// gelu_grad(dy, x) -> dx, all f32 of x's shape; 'approximate' is returned unchecked (the kernels
// report a value other than "none" and "tanh" after the operand checks, as they always did).
Status checkGeluGrad(const KernelArgs &args, std::string *approximate);
// The error for an 'approximate' other than "none" and "tanh".
Status geluGradApproximateError(const std::string &approximate);

// clip(x, [min], [max]) -> y: numeric x, y like x, each present bound x's dtype with one element.
// `lo` and `hi` point at the present bounds, null where absent.
Status checkClip(const KernelArgs &args, const Tensor **lo, const Tensor **hi);

// global_norm(inputs...) -> total_norm: f32 inputs, a 0-d f32 output.
Status checkGlobalNorm(const KernelArgs &args);

// scale_by_clip(grad, total_norm) -> output: f32, a 0-d norm, the 'max_norm' attribute.
Status checkScaleByClip(const KernelArgs &args, float *maxNorm);

// reduce_max_grad(dy, x, y) -> dx: f32, 'axes' sorted and distinct, y and dy of reduce_max's
// output shape for 'keepdims'. `reduced` marks the reduced dims of x.
Status checkReduceMaxGrad(const KernelArgs &args, std::vector<bool> *reduced);

} // namespace shardc::runtime::cpu
