// What the convolution and pooling kernels (conv.cpp, pool.cpp) share: their N-d layout, the
// checks of their window attributes and of the output extent the compiler chose.
#pragma once

#include "runtime/kernels/kernel.h"

#include <array>
#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// The kernels take 1 to 3 spatial dims. Internally every call has three: the ones a call lacks
// are leading unit dims (size 1, kernel 1, stride 1, no padding, dilation 1), which change no
// index, so one loop nest serves 1-, 2- and 3-D windows.
inline constexpr int kSpatial = 3;
using SpatialDims = std::array<int64_t, kSpatial>;

// A tensor and the name the kernel's messages give it.
struct NamedTensor {
  const char *role = nullptr;
  const Tensor *tensor = nullptr;
};

// *out = the product of `dims`; false when it overflows int64.
bool spatialProduct(const SpatialDims &dims, int64_t *out);

// Reads ints attribute `name` of `kernel`: `perDim` entries per spatial dim of x, each in
// [min, 2^40] (bounded, so that the index arithmetic of an accepted call cannot overflow).
Status spatialAttr(const char *kernel, const KernelArgs &args, const char *name, int64_t perDim,
                   int64_t min, const NamedTensor &x, int64_t spatial,
                   std::vector<int64_t> *values);

// Checks that y's `out` positions along spatial dim `dim` are what a window of `window` taps
// `dilation` apart, moved by `stride`, gives on x's `in` elements padded by padBegin and padEnd:
// with the extent E = in + padBegin + padEnd - dilation*(window-1) - 1 >= 0, floor(E/stride)+1
// or ceil(E/stride)+1 (ceil mode; the compiler chose the output shape).
Status checkOutputExtent(const char *kernel, const NamedTensor &x, const NamedTensor &y,
                         int64_t dim, int64_t in, int64_t window, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation, int64_t out);

} // namespace shardc::runtime::cpu
