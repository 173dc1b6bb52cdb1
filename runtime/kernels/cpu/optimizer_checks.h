// The contracts of the optimizer updates (adamw_update, sgd_update), written once for every
// device: operand dtypes and shapes (step an i64 scalar, lr and the optional skip f32 scalars)
// and the hyperparameter attributes. They read no tensor data: the step, lr and skip values are
// read by each device's kernel (the CUDA ones on the device).
#pragma once

#include "runtime/kernels/kernel.h"

#include <cstdint>

namespace shardc::runtime::cpu {

struct AdamwAttrs {
  double beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
};
// adamw_update(param, grad, exp_avg, exp_avg_sq, step, lr[, skip])
//   -> (new_param, new_exp_avg, new_exp_avg_sq)
Status checkAdamw(const KernelArgs &args, AdamwAttrs *attrs);

struct SgdAttrs {
  double momentum = 0, dampening = 0, weightDecay = 0;
  int64_t nesterov = 0;
};
// sgd_update(param, grad, momentum_buffer, step, lr[, skip]) -> (new_param, new_momentum_buffer)
Status checkSgd(const KernelArgs &args, SgdAttrs *attrs);

// Whether the optional skip input `index` is present (checked by checkAdamw / checkSgd).
bool hasSkip(const KernelArgs &args, size_t index);

} // namespace shardc::runtime::cpu
