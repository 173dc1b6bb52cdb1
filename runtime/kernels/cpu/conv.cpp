// conv, conv_grad_input, conv_grad_weight: grouped N-d convolution (ONNX Conv without bias) and
// its two gradients, on OpenBLAS sgemm.
//
// Each image and group is one matrix product against the im2col matrix of the image's group of
// channels: row (c, k) of it (a channel and a kernel tap, row-major) holds, for every output
// position o, the input element that tap reads, o*stride - padBegin + k*dilation, or 0 where that
// falls in the padding. With W_g the group's filters as a [M/group, C/group * prod(K)] matrix:
//   conv:             y_g  = W_g · col(x_g)
//   conv_grad_input:  dx_g = col2im(W_g^T · dy_g)      (col2im adds each column entry back to the
//                                                       element it was read from: the adjoint)
//   conv_grad_weight: dw_g = Σ_images dy_g · col(x_g)^T
// The column matrix lives in the workspace (one image and group at a time). A pointwise
// convolution (every kernel dim 1, stride 1, no padding) has the image itself as its column
// matrix and takes no workspace.
#include "runtime/kernels/cpu/blas.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/spatial.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

enum class ConvKind { kForward, kGradInput, kGradWeight };

// The geometry of one call, shared by the three kernels and their workspace-size functions.
struct ConvGeometry {
  int64_t batch = 0;    // N
  int64_t channels = 0; // C, of x (dx)
  int64_t filters = 0;  // M, of w (dw) and y (dy)
  int64_t group = 1;
  SpatialDims in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1};
  SpatialDims stride{1, 1, 1}, padBegin{0, 0, 0}, dilation{1, 1, 1};
  int64_t inSize = 1, kernelSize = 1, outSize = 1; // products of in, kernel, out
  bool pointwise = false;                          // the image is its own column matrix
  int64_t colCount = 0; // elements of one column matrix: colRows() * outSize

  int64_t groupChannels() const { return channels / group; }
  int64_t groupFilters() const { return filters / group; }
  int64_t colRows() const { return groupChannels() * kernelSize; }
};

// One checked call: its name, the operands in the roles of the forward (x, w, y; a gradient
// kernel's dx, dw or dy stands in for the one of the same shape) and the geometry.
struct ConvCall {
  const char *kernel = nullptr;
  NamedTensor x, w, y;
  ConvGeometry geometry;
};

// Checks a call of kernel `kind` (operands, dtypes, attributes, shapes) and works out its
// geometry. The kernels and their workspace-size functions both start here, so a size function
// rejects exactly what its kernel rejects.
Status parseConvCall(ConvKind kind, const KernelArgs &args, ConvCall *call) {
  static const char *const kNames[] = {"conv", "conv_grad_input", "conv_grad_weight"};
  const char *kernel = kNames[static_cast<int>(kind)];
  call->kernel = kernel;
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &in0 = args.inputs[0], &in1 = args.inputs[1], &out0 = args.outputs[0];
  switch (kind) {
  case ConvKind::kForward: // x, w -> y
    call->x = {"x", &in0}, call->w = {"w", &in1}, call->y = {"y", &out0};
    break;
  case ConvKind::kGradInput: // dy, w -> dx
    call->y = {"dy", &in0}, call->w = {"w", &in1}, call->x = {"dx", &out0};
    break;
  case ConvKind::kGradWeight: // x, dy -> dw
    call->x = {"x", &in0}, call->y = {"dy", &in1}, call->w = {"dw", &out0};
    break;
  }
  for (const NamedTensor *n : {&call->x, &call->w, &call->y})
    SHARDC_RETURN_IF_ERROR(expectDtype(kernel, n->role, *n->tensor, program::F32));
  const Tensor &x = *call->x.tensor, &w = *call->w.tensor, &y = *call->y.tensor;
  const std::string xDesc = std::string(call->x.role) + " " + x.describe();
  const std::string wDesc = std::string(call->w.role) + " " + w.describe();
  const std::string yDesc = std::string(call->y.role) + " " + y.describe();
  if (x.rank() < 3 || x.rank() > 2 + kSpatial || w.rank() != x.rank() || y.rank() != x.rank())
    return Status::error(std::string(kernel) + ": " + xDesc + ", " + wDesc + " and " + yDesc +
                         " must have one rank, 3 to 5 (batch, channels, 1 to 3 spatial dims)");
  const int64_t spatial = x.rank() - 2;

  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 0;
  SHARDC_RETURN_IF_ERROR(spatialAttr(kernel, args, "strides", 1, 1, call->x, spatial, &strides));
  SHARDC_RETURN_IF_ERROR(spatialAttr(kernel, args, "pads", 2, 0, call->x, spatial, &pads));
  SHARDC_RETURN_IF_ERROR(
      spatialAttr(kernel, args, "dilations", 1, 1, call->x, spatial, &dilations));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "group", &group));

  ConvGeometry &g = call->geometry;
  g.batch = x.shape[0];
  g.channels = x.shape[1];
  g.filters = w.shape[0];
  if (group < 1 || g.channels % group != 0 || g.filters % group != 0)
    return Status::error(std::string(kernel) + ": attribute 'group' = " + std::to_string(group) +
                         " must be positive and divide the channels of " + xDesc +
                         " and the filters of " + wDesc);
  g.group = group;
  if (w.shape[1] != g.groupChannels())
    return Status::error(std::string(kernel) + ": " + wDesc + " must have " +
                         std::to_string(g.groupChannels()) + " channels per filter (the " +
                         std::to_string(g.channels) + " of " + xDesc + " / group " +
                         std::to_string(group) + ")");
  if (y.shape[0] != g.batch || y.shape[1] != g.filters)
    return Status::error(std::string(kernel) + ": " + yDesc + " must have the batch of " + xDesc +
                         " and the filters of " + wDesc);

  g.pointwise = true;
  for (int64_t i = 0; i < spatial; ++i) {
    const size_t d = static_cast<size_t>(kSpatial - spatial + i), a = static_cast<size_t>(i);
    const size_t dim = static_cast<size_t>(2 + i);
    if (w.shape[dim] < 1)
      return Status::error(std::string(kernel) + ": " + wDesc +
                           " must have a positive kernel size in every spatial dim");
    SHARDC_RETURN_IF_ERROR(checkOutputExtent(kernel, call->x, call->y, i, x.shape[dim],
                                             w.shape[dim], strides[a], pads[a],
                                             pads[a + spatial], dilations[a], y.shape[dim]));
    g.in[d] = x.shape[dim];
    g.kernel[d] = w.shape[dim];
    g.out[d] = y.shape[dim];
    g.stride[d] = strides[a];
    g.padBegin[d] = pads[a];
    g.dilation[d] = dilations[a];
    g.pointwise = g.pointwise && g.kernel[d] == 1 && g.stride[d] == 1 && pads[a] == 0 &&
                  pads[a + spatial] == 0;
  }
  // A tensor with a zero dim passes checkOperands whatever its other dims, so these products
  // (and the column matrix's size) need not fit in int64 even for well-formed operands.
  int64_t rows = 0;
  if (!spatialProduct(g.in, &g.inSize) || !spatialProduct(g.kernel, &g.kernelSize) ||
      !spatialProduct(g.out, &g.outSize) ||
      __builtin_mul_overflow(g.groupChannels(), g.kernelSize, &rows) ||
      __builtin_mul_overflow(rows, g.outSize, &g.colCount))
    return Status::error(std::string(kernel) + ": the im2col matrix of " + xDesc + " and " + wDesc +
                         " is too large");
  return checkBlasDims(kernel, {g.groupFilters(), g.colRows(), g.outSize});
}

// The workspace: one image's column matrix for one group, unless the image is its own.
Status takeColumns(Workspace &workspace, const ConvCall &call, float **columns) {
  *columns = nullptr;
  if (call.geometry.pointwise)
    return Status::ok();
  return workspace.take(call.kernel, call.geometry.colCount, columns);
}

Status convCallWorkspace(ConvKind kind, const KernelArgs &args, uint64_t *bytes) {
  ConvCall call;
  SHARDC_RETURN_IF_ERROR(parseConvCall(kind, args, &call));
  float *columns = nullptr;
  return measureWorkspace(
      bytes, [&](Workspace &workspace) { return takeColumns(workspace, call, &columns); });
}

// The output positions o of dim d whose input position o*stride - padBegin + k*dilation for
// kernel tap k lies in [0, in): the range [lo, hi) (empty when lo == hi). The position of
// output 0 is `shift`.
struct Taps {
  int64_t shift, lo, hi;
};

Taps tapRange(const ConvGeometry &g, size_t d, int64_t k) {
  const int64_t s = g.stride[d];
  Taps t;
  t.shift = k * g.dilation[d] - g.padBegin[d];
  // Smallest o with o*s + shift >= 0, and smallest with o*s + shift >= in.
  t.lo = t.shift >= 0 ? 0 : (-t.shift + s - 1) / s;
  t.hi = g.in[d] - t.shift <= 0 ? 0 : (g.in[d] - t.shift + s - 1) / s;
  t.hi = std::min(t.hi, g.out[d]);
  t.lo = std::min(t.lo, t.hi);
  return t;
}

// Walks the column matrix of one image and group (row (c, k), column o): for each run of
// columns that read the image, inRange(colIndex, xIndex, count, xStep) (column colIndex + i
// reads element xIndex + i*xStep of the group's channels); for each run in the padding,
// padding(colIndex, count). im2col and col2im are the two directions of this one walk.
template <typename InRange, typename Padding>
void walkColumns(const ConvGeometry &g, InRange inRange, Padding padding) {
  const int64_t outRow = g.out[1] * g.out[2], inRow = g.in[1] * g.in[2];
  int64_t colBase = 0; // the first column of row (c, k)
  for (int64_t c = 0; c < g.groupChannels(); ++c) {
    const int64_t channelBase = c * g.inSize;
    for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
      const Taps t0 = tapRange(g, 0, k0);
      for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
        const Taps t1 = tapRange(g, 1, k1);
        for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2, colBase += g.outSize) {
          const Taps t2 = tapRange(g, 2, k2);
          for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
            for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
              const int64_t colIndex = colBase + o0 * outRow + o1 * g.out[2];
              if (o0 < t0.lo || o0 >= t0.hi || o1 < t1.lo || o1 >= t1.hi) {
                padding(colIndex, g.out[2]);
                continue;
              }
              padding(colIndex, t2.lo);
              if (t2.hi > t2.lo) {
                const int64_t xIndex = channelBase + (o0 * g.stride[0] + t0.shift) * inRow +
                                       (o1 * g.stride[1] + t1.shift) * g.in[2] +
                                       t2.lo * g.stride[2] + t2.shift;
                inRange(colIndex + t2.lo, xIndex, t2.hi - t2.lo, g.stride[2]);
              }
              padding(colIndex + t2.hi, g.out[2] - t2.hi);
            }
          }
        }
      }
    }
  }
}

// columns = im2col(x), x being one image's group of channels.
void im2col(const ConvGeometry &g, const float *x, float *columns) {
  walkColumns(
      g,
      [&](int64_t col, int64_t xi, int64_t count, int64_t step) {
        for (int64_t i = 0; i < count; ++i)
          columns[col + i] = x[xi + i * step];
      },
      [&](int64_t col, int64_t count) { std::fill(columns + col, columns + col + count, 0.0f); });
}

// x += col2im(columns): every column entry goes back to the element it was read from (windows
// overlap, so entries accumulate); padding entries are dropped.
void col2imAdd(const ConvGeometry &g, const float *columns, float *x) {
  walkColumns(
      g,
      [&](int64_t col, int64_t xi, int64_t count, int64_t step) {
        for (int64_t i = 0; i < count; ++i)
          x[xi + i * step] += columns[col + i];
      },
      [](int64_t, int64_t) {});
}

} // namespace

Status convWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return convCallWorkspace(ConvKind::kForward, args, bytes);
}

Status convGradInputWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return convCallWorkspace(ConvKind::kGradInput, args, bytes);
}

Status convGradWeightWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return convCallWorkspace(ConvKind::kGradWeight, args, bytes);
}

Status convKernel(KernelArgs &args) {
  ConvCall call;
  SHARDC_RETURN_IF_ERROR(parseConvCall(ConvKind::kForward, args, &call));
  Workspace workspace(args);
  float *columns = nullptr;
  SHARDC_RETURN_IF_ERROR(takeColumns(workspace, call, &columns));
  const ConvGeometry &g = call.geometry;
  const float *x = call.x.tensor->as<float>(), *w = call.w.tensor->as<float>();
  float *y = call.y.tensor->as<float>();
  const int64_t cg = g.groupChannels(), mg = g.groupFilters(), rows = g.colRows();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const float *xg = x + (n * g.channels + grp * cg) * g.inSize;
      if (!g.pointwise)
        im2col(g, xg, columns);
      // y_g [M/group, O] = W_g [M/group, rows] · col [rows, O]
      sgemm(false, false, mg, g.outSize, rows, 1.0f, w + grp * mg * rows,
            g.pointwise ? xg : columns, 0.0f, y + (n * g.filters + grp * mg) * g.outSize);
    }
  }
  return Status::ok();
}

Status convGradInputKernel(KernelArgs &args) {
  ConvCall call;
  SHARDC_RETURN_IF_ERROR(parseConvCall(ConvKind::kGradInput, args, &call));
  Workspace workspace(args);
  float *columns = nullptr;
  SHARDC_RETURN_IF_ERROR(takeColumns(workspace, call, &columns));
  const ConvGeometry &g = call.geometry;
  const float *dy = call.y.tensor->as<float>(), *w = call.w.tensor->as<float>();
  float *dx = call.x.tensor->as<float>();
  const int64_t cg = g.groupChannels(), mg = g.groupFilters(), rows = g.colRows();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      float *dxg = dx + (n * g.channels + grp * cg) * g.inSize;
      const float *dyg = dy + (n * g.filters + grp * mg) * g.outSize;
      // col [rows, O] = W_g^T [rows, M/group] · dy_g [M/group, O]; pointwise, col is dx_g.
      sgemm(true, false, rows, g.outSize, mg, 1.0f, w + grp * mg * rows, dyg, 0.0f,
            g.pointwise ? dxg : columns);
      if (!g.pointwise) {
        std::fill(dxg, dxg + cg * g.inSize, 0.0f);
        col2imAdd(g, columns, dxg);
      }
    }
  }
  return Status::ok();
}

Status convGradWeightKernel(KernelArgs &args) {
  ConvCall call;
  SHARDC_RETURN_IF_ERROR(parseConvCall(ConvKind::kGradWeight, args, &call));
  Workspace workspace(args);
  float *columns = nullptr;
  SHARDC_RETURN_IF_ERROR(takeColumns(workspace, call, &columns));
  const ConvGeometry &g = call.geometry;
  const float *x = call.x.tensor->as<float>(), *dy = call.y.tensor->as<float>();
  float *dw = call.w.tensor->as<float>();
  const int64_t cg = g.groupChannels(), mg = g.groupFilters(), rows = g.colRows();
  // Every image adds its product, so dw starts at zero (and stays so with no images).
  std::fill(dw, dw + call.w.tensor->numel(), 0.0f);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const float *xg = x + (n * g.channels + grp * cg) * g.inSize;
      if (!g.pointwise)
        im2col(g, xg, columns);
      // dw_g [M/group, rows] += dy_g [M/group, O] · col^T [O, rows]
      sgemm(false, true, mg, rows, g.outSize, 1.0f, dy + (n * g.filters + grp * mg) * g.outSize,
            g.pointwise ? xg : columns, 1.0f, dw + grp * mg * rows);
    }
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
