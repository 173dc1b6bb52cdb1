// What gather and its backward (gather_grad) share: reading and checking the indices.
#pragma once

#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// `indices` (i64 or i32) select entries along dimension `axis` of a tensor of shape
// `dataShape`; `sliced` (gather's output, gather_grad's dy) must have the shape
// dataShape[:axis] + indices.shape + dataShape[axis+1:]. Returns every index with negatives
// counted from the end, all range-checked before the caller writes anything.
Status readGatherIndices(const char *kernel, const std::vector<int64_t> &dataShape, int64_t axis,
                         const Tensor &indices, const Tensor &sliced, const char *slicedName,
                         std::vector<int64_t> *rows);

} // namespace shardc::runtime::cpu
