// Index checks shared by gather and gather_grad.
#include "runtime/kernels/cpu/gather_indices.h"

#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/index_block.h"

#include <string>

namespace shardc::runtime::cpu {

Status takeGatherRows(const char *kernel, Workspace &workspace, const Tensor &indices,
                      int64_t **rows) {
  return workspace.take(kernel, indices.numel(), rows);
}

Status gatherRowsWorkspace(const char *kernel, const KernelArgs &args, uint64_t *bytes) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kernel, args, Arity::exactly(2), Arity::exactly(1)));
  int64_t *rows = nullptr;
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    return takeGatherRows(kernel, workspace, args.inputs[1], &rows);
  });
}

Status readGatherIndices(const char *kernel, const KernelArgs &args,
                         const std::vector<int64_t> &dataShape, int64_t axis,
                         const Tensor &indices, const Tensor &sliced, const char *slicedName,
                         Workspace &workspace, const int64_t **rows) {
  if (indices.dtype != program::I64 && indices.dtype != program::I32)
    return Status::error(std::string(kernel) + ": indices are " + dtypeName(indices.dtype) +
                         ", expected i64 or i32");
  SHARDC_RETURN_IF_ERROR(expectAxis(kernel, "axis", axis, static_cast<int64_t>(dataShape.size())));
  const size_t ax = static_cast<size_t>(axis);
  std::vector<int64_t> expected(dataShape.begin(), dataShape.begin() + ax);
  expected.insert(expected.end(), indices.shape.begin(), indices.shape.end());
  expected.insert(expected.end(), dataShape.begin() + ax + 1, dataShape.end());
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, slicedName, sliced, expected));

  IndexBlock block;
  SHARDC_RETURN_IF_ERROR(readIndexBlock(kernel, args, dataShape[ax], &block));
  const int64_t dim = block.whole;
  const int64_t count = indices.numel();
  int64_t *out = nullptr;
  SHARDC_RETURN_IF_ERROR(takeGatherRows(kernel, workspace, indices, &out));
  *rows = out;
  return visitIndex(indices.dtype, [&](auto tag) {
    using I = decltype(tag);
    const I *pi = indices.as<I>();
    for (int64_t j = 0; j < count; ++j) {
      const int64_t index = static_cast<int64_t>(pi[j]);
      const int64_t row = index < 0 ? index + dim : index;
      if (row < 0 || row >= dim)
        return Status::error(std::string(kernel) + ": index " + std::to_string(index) +
                             " is out of range for axis " + std::to_string(axis) + " of size " +
                             std::to_string(dim) + (block.split ? " (index_size)" : ""));
      out[j] = block.holds(row) ? row - block.offset : -1;
    }
    return Status::ok();
  });
}

} // namespace shardc::runtime::cpu
