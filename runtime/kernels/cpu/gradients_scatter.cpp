// gather_grad and pad_for_slice: the backwards of gather and slice. Both zero their output
// (the forward's input shape, taken from the output tensor) and scatter dy into the positions
// the forward read; gather_grad adds, because a repeated index (tied embeddings, a token that
// occurs twice) read the same row more than once, while slice reads each position at most once.
// gather_grad, like gather, may hold only an index block of ddata's axis (index_block.h): it
// adds only the indices its block holds, so the blocks' outputs concatenate to the whole.
#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/gather_indices.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace shardc::runtime::cpu {

Status gatherGradKernel(KernelArgs &args) {
  const char *kernel = "gather_grad";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &indices = args.inputs[1], &ddata = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "dy", dy, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "ddata", ddata, program::F32));
  Workspace workspace(args);
  const int64_t *rows = nullptr;
  SHARDC_RETURN_IF_ERROR(
      readGatherIndices(kernel, args, ddata.shape, axis, indices, dy, "dy", workspace, &rows));
  const int64_t count = indices.numel();
  const size_t ax = static_cast<size_t>(axis);
  const int64_t dim = ddata.shape[ax];

  float *out = ddata.as<float>();
  if (ddata.sizeBytes() > 0)
    std::memset(out, 0, ddata.sizeBytes());
  const int64_t outer = dimsProduct(ddata.shape, 0, ax);
  const int64_t inner = dimsProduct(ddata.shape, ax + 1, ddata.shape.size());
  const float *src = dy.as<float>();
  for (int64_t o = 0; o < outer; ++o) {
    float *slab = out + o * dim * inner;
    for (int64_t j = 0; j < count; ++j, src += inner) {
      if (rows[j] < 0) // another block's row
        continue;
      float *dst = slab + rows[j] * inner;
      for (int64_t i = 0; i < inner; ++i)
        dst[i] += src[i];
    }
  }
  return Status::ok();
}

Status gatherGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return gatherRowsWorkspace("gather_grad", args, bytes);
}

Status padForSliceKernel(KernelArgs &args) {
  const char *kernel = "pad_for_slice";
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(1), Arity::exactly(1)));
  const Tensor &dy = args.inputs[0], &dx = args.outputs[0];
  std::vector<int64_t> starts, steps;
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "starts", &starts));
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "steps", &steps));
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, "dy", dy, "dx", dx));
  const size_t rank = dx.shape.size();
  if (starts.size() != rank || steps.size() != rank)
    return Status::error(std::string(kernel) +
                         ": attributes 'starts' and 'steps' need one entry per dim of dx " +
                         dx.describe() + ", got " + std::to_string(starts.size()) + " and " +
                         std::to_string(steps.size()));
  if (dy.shape.size() != rank)
    return Status::error(std::string(kernel) + ": dy " + dy.describe() +
                         " must have the rank of dx " + dx.describe());
  // The same plan and extent checks as the forward `slice` (data_movement.cpp), with dx in the
  // role of x and dy in the role of y: element i of dim d of dy lands at
  // starts[d] + i * steps[d] of dx.
  const std::vector<int64_t> dxStrides = contiguousStrides(dx.shape);
  StridedLoop loop;
  loop.numOperands = 1;
  loop.dims = dy.shape;
  loop.strides[0].resize(rank);
  int64_t base = 0;
  const bool empty = dy.numel() == 0;
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0 || steps[d] == std::numeric_limits<int64_t>::min())
      return Status::error(std::string(kernel) + ": invalid step " + std::to_string(steps[d]) +
                           " for dim " + std::to_string(d));
    const int64_t count = dy.shape[d];
    if (!empty) {
      const int64_t first = starts[d];
      const bool firstOk = first >= 0 && first < dx.shape[d];
      const int64_t span = count - 1;
      const bool lastOk = firstOk && (steps[d] > 0 ? span <= (dx.shape[d] - 1 - first) / steps[d]
                                                   : span <= first / -steps[d]);
      if (!lastOk)
        return Status::error(std::string(kernel) + ": dim " + std::to_string(d) + " writes " +
                             std::to_string(count) + " elements from " + std::to_string(first) +
                             " with step " + std::to_string(steps[d]) + ", outside dx's extent " +
                             std::to_string(dx.shape[d]));
      base += first * dxStrides[d];
    }
    loop.strides[0][d] = count > 1 && !empty ? steps[d] * dxStrides[d] : 0;
  }
  loop.baseOffsets[0] = base;
  loop.coalesce();

  if (dx.sizeBytes() > 0)
    std::memset(dx.data, 0, dx.sizeBytes());
  // All-zero bytes are 0 in every dtype, so the scatter only needs the element size.
  return visitElementSize(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *src = dy.as<T>();
    T *dst = dx.as<T>();
    forEachRow(loop,
               [&](int64_t dyOffset, const int64_t *dxOffsets, const int64_t *dxSteps, int64_t n) {
                 for (int64_t i = 0; i < n; ++i)
                   dst[dxOffsets[0] + i * dxSteps[0]] = src[dyOffset + i];
               });
    return Status::ok();
  });
}

} // namespace shardc::runtime::cpu
