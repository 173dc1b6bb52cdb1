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
#include "runtime/kernels/cpu/pad_scan_checks.h"

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
  StridedLoop loop;
  SHARDC_RETURN_IF_ERROR(planPadForSlice(args, &loop));
  const Tensor &dy = args.inputs[0], &dx = args.outputs[0];

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
