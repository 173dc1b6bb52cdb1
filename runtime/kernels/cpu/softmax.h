// The softmax loop shared by the softmax kernels and softmax_cross_entropy_loss.
#pragma once

#include <cstdint>

namespace shardc::runtime::cpu {

// Viewing x and y as [outer, dim, inner] (row-major, f32), writes softmax (or log_softmax when
// `logOutput`) of x along the middle dim into y.
void softmaxAlongAxis(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner,
                      bool logOutput);

} // namespace shardc::runtime::cpu
