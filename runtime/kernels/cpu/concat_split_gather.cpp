// concat, split and gather: kernels that move whole contiguous blocks along one axis. Viewed
// around the axis, every tensor is [outer, dim, inner], and each block is dim' * inner elements.
// gather may hold only an index block of its data's axis (index_block.h): indices that another
// block holds give zero rows, so the blocks' outputs sum to the whole gather.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/gather_indices.h"
#include "runtime/kernels/cpu/movement_checks.h"

#include <cstring>

namespace shardc::runtime::cpu {

Status concatKernel(KernelArgs &args) {
  size_t ax = 0;
  SHARDC_RETURN_IF_ERROR(checkConcat(args, &ax));
  const Tensor &y = args.outputs[0];
  const int64_t outer = dimsProduct(y.shape, 0, ax);
  const size_t innerBytes =
      static_cast<size_t>(dimsProduct(y.shape, ax + 1, y.shape.size())) * dtypeSize(y.dtype);
  char *dst = static_cast<char *>(y.data);
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor &x : args.inputs) {
      const size_t block = static_cast<size_t>(x.shape[ax]) * innerBytes;
      if (block == 0)
        continue;
      std::memcpy(dst, static_cast<const char *>(x.data) + o * block, block);
      dst += block;
    }
  }
  return Status::ok();
}

Status splitKernel(KernelArgs &args) {
  size_t ax = 0;
  SHARDC_RETURN_IF_ERROR(checkSplit(args, &ax));
  const Tensor &x = args.inputs[0];
  const int64_t outer = dimsProduct(x.shape, 0, ax);
  const size_t innerBytes =
      static_cast<size_t>(dimsProduct(x.shape, ax + 1, x.shape.size())) * dtypeSize(x.dtype);
  const char *src = static_cast<const char *>(x.data);
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor &yi : args.outputs) {
      const size_t block = static_cast<size_t>(yi.shape[ax]) * innerBytes;
      if (block == 0)
        continue;
      std::memcpy(static_cast<char *>(yi.data) + o * block, src, block);
      src += block;
    }
  }
  return Status::ok();
}

Status gatherKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("gather", args, Arity::exactly(2), Arity::exactly(1)));
  const Tensor &data = args.inputs[0], &indices = args.inputs[1], &y = args.outputs[0];
  int64_t axis = 0;
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "axis", &axis));
  SHARDC_RETURN_IF_ERROR(expectSameDtype("gather", "data", data, "y", y));
  Workspace workspace(args);
  const int64_t *rows = nullptr;
  SHARDC_RETURN_IF_ERROR(
      readGatherIndices("gather", args, data.shape, axis, indices, y, "y", workspace, &rows));
  const int64_t count = indices.numel();
  const size_t ax = static_cast<size_t>(axis);
  const int64_t dim = data.shape[ax];

  const int64_t outer = dimsProduct(data.shape, 0, ax);
  const size_t innerBytes =
      static_cast<size_t>(dimsProduct(data.shape, ax + 1, data.shape.size())) *
      dtypeSize(data.dtype);
  if (innerBytes == 0)
    return Status::ok();
  const char *src = static_cast<const char *>(data.data);
  char *dst = static_cast<char *>(y.data);
  for (int64_t o = 0; o < outer; ++o) {
    const char *slab = src + static_cast<size_t>(o * dim) * innerBytes;
    for (int64_t j = 0; j < count; ++j) {
      if (rows[j] < 0) // another block's row; all-zero bytes are 0 in every dtype
        std::memset(dst, 0, innerBytes);
      else
        std::memcpy(dst, slab + static_cast<size_t>(rows[j]) * innerBytes, innerBytes);
      dst += innerBytes;
    }
  }
  return Status::ok();
}

Status gatherWorkspace(const KernelArgs &args, uint64_t *bytes) {
  return gatherRowsWorkspace("gather", args, bytes);
}

} // namespace shardc::runtime::cpu
