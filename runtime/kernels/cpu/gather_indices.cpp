// Index checks shared by gather and gather_grad.
#include "runtime/kernels/cpu/gather_indices.h"

#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/dtype_dispatch.h"
#include "runtime/kernels/cpu/index_block.h"
#include "runtime/kernels/cpu/movement_checks.h"

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
  IndexBlock block;
  SHARDC_RETURN_IF_ERROR(checkGatherOperands(kernel, args, dataShape, axis, indices, sliced,
                                             slicedName, &block));
  int64_t *out = nullptr;
  SHARDC_RETURN_IF_ERROR(takeGatherRows(kernel, workspace, indices, &out));
  *rows = out;
  return gatherRowsOf(kernel, axis, block, indices, out);
}

} // namespace shardc::runtime::cpu
