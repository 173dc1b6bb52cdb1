// The softmax loop shared by the softmax kernels and softmax_cross_entropy_loss.
#pragma once

#include "runtime/kernels/cpu/workspace.h"

#include <cstdint>

namespace shardc::runtime::cpu {

// The workspace of softmaxAlongAxis: a running maximum and sum per inner position when the
// axis is not the innermost one (inner > 1); nothing otherwise.
struct SoftmaxScratch {
  float *maxes = nullptr;
  double *sums = nullptr;
};
Status takeSoftmaxScratch(const char *kernel, Workspace &workspace, int64_t inner,
                          SoftmaxScratch *scratch);

// Viewing x and y as [outer, dim, inner] (row-major, f32), writes softmax (or log_softmax when
// `logOutput`) of x along the middle dim into y.
void softmaxAlongAxis(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner,
                      bool logOutput, const SoftmaxScratch &scratch);

} // namespace shardc::runtime::cpu
