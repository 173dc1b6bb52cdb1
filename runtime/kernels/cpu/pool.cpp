// max_pool, avg_pool and their gradients: N-d pooling (ONNX MaxPool, AveragePool) of tensors
// laid out [N, C, spatial...], each (image, channel) plane on its own.
//
// Output position o of a spatial dim has a window of `kernel` taps: tap k reads input position
// o*stride - padBegin + k*dilation. Taps outside [0, in) read nothing (padding): max pooling
// treats them as -inf, average pooling leaves them out of the sum and counts them in the divisor
// or not (count_include_pad). The output shape is the compiler's (floor or ceil mode), so the last
// window may hang past the padded input; one helper (PoolGeometry::window) clips every window for
// all four kernels.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/spatial.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

enum class PoolKind { kMax, kMaxGrad, kAvg, kAvgGrad };

// One dim of one output position's window: taps [kLo, kHi) read the input (positions
// start + k*dilation in [0, in)); `padded` taps lie in the padded extent [-padBegin, in + padEnd)
// (the window can hang past it in ceil mode: PyTorch clips the divisor there).
struct Window {
  int64_t start = 0, kLo = 0, kHi = 0, padded = 0;
};

struct PoolGeometry {
  int64_t planes = 0; // N * C
  SpatialDims in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1};
  SpatialDims stride{1, 1, 1}, padBegin{0, 0, 0}, padEnd{0, 0, 0}, dilation{1, 1, 1};
  int64_t inSize = 1, outSize = 1; // elements of one plane of the input, of the output
  bool countIncludePad = false;    // avg_pool's divisor: padded taps instead of in-range ones

  Window window(size_t d, int64_t o) const {
    Window w;
    const int64_t dil = dilation[d];
    w.start = o * stride[d] - padBegin[d];
    // First tap at or after position 0; first tap at or after `in` (or the window's end).
    w.kLo = w.start >= 0 ? 0 : (-w.start + dil - 1) / dil;
    w.kHi = in[d] - w.start <= 0 ? 0 : std::min(kernel[d], (in[d] - w.start + dil - 1) / dil);
    w.kLo = std::min(w.kLo, w.kHi);
    // start >= -padBegin always, so only the end of the padded extent clips.
    const int64_t paddedEnd = in[d] + padEnd[d] - w.start;
    w.padded = paddedEnd <= 0 ? 0 : std::min(kernel[d], (paddedEnd + dil - 1) / dil);
    return w;
  }

  // avg_pool's divisor for the window of dims w: its padded or in-range taps (as a double: a
  // product of three large kernel dims need not fit in int64). 0 for a window with none.
  double divisor(const Window (&w)[kSpatial]) const {
    double n = 1.0;
    for (const Window &wd : w)
      n *= static_cast<double>(countIncludePad ? wd.padded : wd.kHi - wd.kLo);
    return n;
  }
};

// One checked call: its name, the operand with the input's shape (x, or dx), the one with the
// output's (y, or dy), and the geometry.
struct PoolCall {
  const char *kernel = nullptr;
  NamedTensor x, y;
  PoolGeometry geometry;
};

// Checks a call of kernel `kind` (operands, dtypes, attributes, shapes) and works out its
// geometry.
Status parsePoolCall(PoolKind kind, const KernelArgs &args, PoolCall *call) {
  static const char *const kNames[] = {"max_pool", "max_pool_grad", "avg_pool", "avg_pool_grad"};
  const char *kernel = kNames[static_cast<int>(kind)];
  call->kernel = kernel;
  const bool maxGrad = kind == PoolKind::kMaxGrad, isMax = kind == PoolKind::kMax || maxGrad;
  SHARDC_RETURN_IF_ERROR(
      checkOperands(kernel, args, Arity::exactly(maxGrad ? 2 : 1), Arity::exactly(1)));
  const Tensor &in0 = args.inputs[0], &out0 = args.outputs[0];
  switch (kind) {
  case PoolKind::kMax:
  case PoolKind::kAvg: // x -> y
    call->x = {"x", &in0}, call->y = {"y", &out0};
    break;
  case PoolKind::kMaxGrad: // dy, x -> dx
    call->y = {"dy", &in0}, call->x = {"x", &args.inputs[1]};
    break;
  case PoolKind::kAvgGrad: // dy -> dx
    call->y = {"dy", &in0}, call->x = {"dx", &out0};
    break;
  }
  const Tensor &x = *call->x.tensor, &y = *call->y.tensor;
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, call->x.role, x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, call->y.role, y, program::F32));
  if (maxGrad) {
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dx", out0, program::F32));
    SHARDC_RETURN_IF_ERROR(expectShape(kernel, "dx", out0, x.shape));
  }
  const std::string xDesc = std::string(call->x.role) + " " + x.describe();
  const std::string yDesc = std::string(call->y.role) + " " + y.describe();
  if (x.rank() < 3 || x.rank() > 2 + kSpatial || y.rank() != x.rank())
    return Status::error(std::string(kernel) + ": " + xDesc + " and " + yDesc +
                         " must have one rank, 3 to 5 (batch, channels, 1 to 3 spatial dims)");
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1])
    return Status::error(std::string(kernel) + ": " + yDesc +
                         " must have the batch and channels of " + xDesc);
  const int64_t spatial = x.rank() - 2;

  std::vector<int64_t> kernelShape, strides, pads, dilations(static_cast<size_t>(spatial), 1);
  SHARDC_RETURN_IF_ERROR(
      spatialAttr(call->kernel, args, "kernel_shape", 1, 1, call->x, spatial, &kernelShape));
  SHARDC_RETURN_IF_ERROR(
      spatialAttr(call->kernel, args, "strides", 1, 1, call->x, spatial, &strides));
  SHARDC_RETURN_IF_ERROR(
      spatialAttr(call->kernel, args, "pads", 2, 0, call->x, spatial, &pads));
  PoolGeometry &g = call->geometry;
  if (isMax) {
    SHARDC_RETURN_IF_ERROR(
      spatialAttr(call->kernel, args, "dilations", 1, 1, call->x, spatial, &dilations));
  } else {
    int64_t countIncludePad = 0;
    SHARDC_RETURN_IF_ERROR(getIntAttr(args, "count_include_pad", &countIncludePad));
    if (countIncludePad != 0 && countIncludePad != 1)
      return Status::error(std::string(kernel) + ": attribute 'count_include_pad' = " +
                           std::to_string(countIncludePad) + " must be 0 or 1");
    g.countIncludePad = countIncludePad == 1;
  }

  for (int64_t i = 0; i < spatial; ++i) {
    const size_t d = static_cast<size_t>(kSpatial - spatial + i), a = static_cast<size_t>(i);
    const size_t dim = static_cast<size_t>(2 + i);
    g.in[d] = x.shape[dim];
    g.out[d] = y.shape[dim];
    g.kernel[d] = kernelShape[a];
    g.stride[d] = strides[a];
    g.padBegin[d] = pads[a];
    g.padEnd[d] = pads[a + static_cast<size_t>(spatial)];
    g.dilation[d] = dilations[a];
    SHARDC_RETURN_IF_ERROR(checkOutputExtent(call->kernel, call->x, call->y, i, g.in[d],
                                             g.kernel[d], g.stride[d], g.padBegin[d],
                                             g.padEnd[d], g.dilation[d], g.out[d]));
  }
  // A tensor with a zero dim passes checkOperands whatever its other dims, so these products
  // need not fit in int64 even for well-formed operands.
  if (__builtin_mul_overflow(x.shape[0], x.shape[1], &g.planes) ||
      !spatialProduct(g.in, &g.inSize) || !spatialProduct(g.out, &g.outSize))
    return Status::error(std::string(kernel) + ": " + xDesc + " or " + yDesc + " is too large");
  return Status::ok();
}

// Calls fn(in, out, windows) for every output position of every (image, channel) plane: `in`
// is the flat offset of the position's input plane (forEachTap's positions are relative to it),
// `out` the flat offset of the output element.
template <typename Fn> void forEachPlaneWindow(const PoolGeometry &g, Fn fn) {
  for (int64_t p = 0; p < g.planes; ++p) {
    const int64_t in = p * g.inSize;
    int64_t out = p * g.outSize;
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
      const Window w0 = g.window(0, o0);
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
        const Window w1 = g.window(1, o1);
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2, ++out) {
          const Window w[kSpatial] = {w0, w1, g.window(2, o2)};
          fn(in, out, w);
        }
      }
    }
  }
}

// Calls fn(i) for the flat plane position i of every in-range tap of windows w, in row-major
// window order.
template <typename Fn> void forEachTap(const PoolGeometry &g, const Window (&w)[kSpatial], Fn fn) {
  for (int64_t k0 = w[0].kLo; k0 < w[0].kHi; ++k0) {
    const int64_t i0 = (w[0].start + k0 * g.dilation[0]) * g.in[1];
    for (int64_t k1 = w[1].kLo; k1 < w[1].kHi; ++k1) {
      const int64_t i1 = (i0 + w[1].start + k1 * g.dilation[1]) * g.in[2];
      for (int64_t k2 = w[2].kLo; k2 < w[2].kHi; ++k2)
        fn(i1 + w[2].start + k2 * g.dilation[2]);
    }
  }
}

// The maximum of a window and its flat position in the plane, by PyTorch's CPU rule, so that
// max_pool_grad routes dy where PyTorch does: the first in-range position holds a -inf start,
// and a later element replaces the maximum when it is greater or NaN (so NaN propagates, and
// the first of equal maxima wins). A window without in-range taps gives -inf at position -1.
struct Argmax {
  float value = -std::numeric_limits<float>::infinity();
  int64_t index = -1;
};

Argmax windowMax(const PoolGeometry &g, const Window (&w)[kSpatial], const float *plane) {
  Argmax best;
  forEachTap(g, w, [&](int64_t i) {
    if (best.index < 0)
      best.index = i;
    const float v = plane[i];
    if (v > best.value || std::isnan(v)) {
      best.value = v;
      best.index = i;
    }
  });
  return best;
}

} // namespace

Status maxPoolKernel(KernelArgs &args) {
  PoolCall call;
  SHARDC_RETURN_IF_ERROR(parsePoolCall(PoolKind::kMax, args, &call));
  const PoolGeometry &g = call.geometry;
  const float *x = call.x.tensor->as<float>();
  float *y = call.y.tensor->as<float>();
  forEachPlaneWindow(g, [&](int64_t in, int64_t out, const Window(&w)[kSpatial]) {
    y[out] = windowMax(g, w, x + in).value;
  });
  return Status::ok();
}

Status maxPoolGradKernel(KernelArgs &args) {
  PoolCall call;
  SHARDC_RETURN_IF_ERROR(parsePoolCall(PoolKind::kMaxGrad, args, &call));
  const PoolGeometry &g = call.geometry;
  const float *x = call.x.tensor->as<float>(), *dy = call.y.tensor->as<float>();
  float *dx = args.outputs[0].as<float>();
  // Windows overlap when the stride is below the kernel: one input can be the maximum of
  // several, and receives the sum of their dy.
  std::fill(dx, dx + args.outputs[0].numel(), 0.0f);
  forEachPlaneWindow(g, [&](int64_t in, int64_t out, const Window(&w)[kSpatial]) {
    const int64_t at = windowMax(g, w, x + in).index;
    if (at >= 0)
      dx[in + at] += dy[out];
  });
  return Status::ok();
}

Status avgPoolKernel(KernelArgs &args) {
  PoolCall call;
  SHARDC_RETURN_IF_ERROR(parsePoolCall(PoolKind::kAvg, args, &call));
  const PoolGeometry &g = call.geometry;
  const float *x = call.x.tensor->as<float>();
  float *y = call.y.tensor->as<float>();
  forEachPlaneWindow(g, [&](int64_t in, int64_t out, const Window(&w)[kSpatial]) {
    // The sum in double, rounded once with the division.
    double sum = 0.0;
    forEachTap(g, w, [&](int64_t i) { sum += x[in + i]; });
    const double divisor = g.divisor(w);
    y[out] = divisor > 0 ? static_cast<float>(sum / divisor) : 0.0f;
  });
  return Status::ok();
}

Status avgPoolGradKernel(KernelArgs &args) {
  PoolCall call;
  SHARDC_RETURN_IF_ERROR(parsePoolCall(PoolKind::kAvgGrad, args, &call));
  const PoolGeometry &g = call.geometry;
  const float *dy = call.y.tensor->as<float>();
  float *dx = call.x.tensor->as<float>();
  // avg_pool's adjoint: each window spreads dy / divisor over its in-range taps; overlapping
  // windows add up.
  std::fill(dx, dx + call.x.tensor->numel(), 0.0f);
  forEachPlaneWindow(g, [&](int64_t in, int64_t out, const Window(&w)[kSpatial]) {
    const double divisor = g.divisor(w);
    if (divisor <= 0)
      return;
    const float share = static_cast<float>(dy[out] / divisor);
    forEachTap(g, w, [&](int64_t i) { dx[in + i] += share; });
  });
  return Status::ok();
}

} // namespace shardc::runtime::cpu
