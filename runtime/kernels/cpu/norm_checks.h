// The contracts of softmax, log_softmax, their backwards, layer_norm and layer_norm_grad
// (operand counts, dtypes, shapes, the axis, scale's and bias's broadcasts), written once for
// every device: the CPU and CUDA kernels of a name call the same check, which reads only the
// operands' dtypes, shapes and presence and the attributes, never their data.
#pragma once

#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// A tensor viewed as [outer, dim, inner] around its softmax axis.
struct AxisSizes {
  int64_t outer = 0, dim = 0, inner = 0;
};

// softmax / log_softmax (x -> y, attribute 'axis').
Status checkSoftmax(const char *kernel, const KernelArgs &args, AxisSizes *sizes);
// softmax_grad / log_softmax_grad ((dy, y) -> dx, attribute 'axis').
Status checkSoftmaxGrad(const char *kernel, const KernelArgs &args, AxisSizes *sizes);

// layer_norm and layer_norm_grad viewed as `rows` rows of the `normSize` elements of the
// normalised dims (`normShape`, from 'axis' on).
struct LayerNormPlan {
  int64_t rows = 0, normSize = 0;
  std::vector<int64_t> normShape;
  float epsilon = 0; // layer_norm only
  // The walks of the normalised dims that read scale, and bias (layer_norm, when present) or
  // dbias (layer_norm_grad, when present), at each position.
  StridedLoop scaleLoop, biasLoop;
};

// layer_norm: (x, scale, bias?) -> (y, mean?, inv_std_dev?), attributes 'axis', 'epsilon'.
Status checkLayerNorm(const KernelArgs &args, LayerNormPlan *plan);
// layer_norm_grad: (dy, x, scale, mean, inv_std_dev) -> (dx?, dscale?, dbias?), 'axis'.
Status checkLayerNormGrad(const KernelArgs &args, LayerNormPlan *plan);

} // namespace shardc::runtime::cpu
