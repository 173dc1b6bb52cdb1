// The contracts of the data-movement kernels (copy, transpose, slice, expand, concat, split,
// trilu) and of gather's indices, written once for every device: the CPU and CUDA kernels of a
// name call the same check, which reads only dtypes, shapes and attributes (never tensor data)
// and plans the strided walk both devices then copy through.
#pragma once

#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/cpu/index_block.h"
#include "runtime/kernels/kernel.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// copy(x) -> y: one dtype, the same element count.
Status checkCopy(const KernelArgs &args);
// transpose(x) -> y: 'perm' a permutation of x's dims; the walk of x in y's order.
Status planTranspose(const KernelArgs &args, StridedLoop *loop);
// slice(x) -> y: 'starts' and 'steps' per dim, every element read inside x; the walk of x.
Status planSlice(const KernelArgs &args, StridedLoop *loop);
// expand(x) -> y: x broadcast to y's shape; the walk of x.
Status planExpand(const KernelArgs &args, StridedLoop *loop);
// concat(inputs...) -> y along attribute 'axis' (returned checked).
Status checkConcat(const KernelArgs &args, size_t *axis);
// split(x) -> outputs... along 'axis' with 'sizes' (returned checked).
Status checkSplit(const KernelArgs &args, size_t *axis);
// trilu(x) -> y: rank >= 2, attributes 'upper' and 'k'.
Status checkTrilu(const KernelArgs &args, int64_t *upper, int64_t *k);

// gather / gather_grad: `indices` (i64 or i32) along `axis` of a tensor of shape `dataShape`;
// `sliced` must have shape dataShape[:axis] + indices.shape + dataShape[axis+1:]. Reads the index
// block of the axis (index_block.h). Reads no index values.
Status checkGatherOperands(const char *kernel, const KernelArgs &args,
                           const std::vector<int64_t> &dataShape, int64_t axis,
                           const Tensor &indices, const Tensor &sliced, const char *slicedName,
                           IndexBlock *block);
// Range-checks the index values of `indices` (whose data must be readable by the host) against
// the whole dimension and writes each one's local row, or -1 where another block holds it.
Status gatherRowsOf(const char *kernel, int64_t axis, const IndexBlock &block,
                    const Tensor &indices, int64_t *rows);

} // namespace shardc::runtime::cpu
