// What gather and its backward (gather_grad) share: reading and checking the indices.
#pragma once

#include "runtime/kernels/cpu/workspace.h"
#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// The workspace of gather and gather_grad: one row number per index (readGatherIndices).
Status takeGatherRows(const char *kernel, Workspace &workspace, const Tensor &indices,
                      int64_t **rows);
// Their workspace-size function (both take data-or-dy, indices).
Status gatherRowsWorkspace(const char *kernel, const KernelArgs &args, uint64_t *bytes);

// `indices` (i64 or i32) select entries along dimension `axis` of a tensor of shape
// `dataShape`; `sliced` (gather's output, gather_grad's dy) must have the shape
// dataShape[:axis] + indices.shape + dataShape[axis+1:]. The indices address the whole dimension
// when `args` give an index block of it (index_block.h). Returns in `rows` (indices.numel()
// entries, from takeGatherRows) each index's row of the local dimension, negatives counted from
// the end of the whole one, or -1 where another block holds it; all are range-checked against
// the whole dimension before the caller writes anything.
Status readGatherIndices(const char *kernel, const KernelArgs &args,
                         const std::vector<int64_t> &dataShape, int64_t axis,
                         const Tensor &indices, const Tensor &sliced, const char *slicedName,
                         Workspace &workspace, const int64_t **rows);

} // namespace shardc::runtime::cpu
