// The contracts of the reductions (reduce_sum, reduce_mean, reduce_max), written once for every
// device: the CPU and CUDA kernels call the same check, which reads only dtypes, shapes and
// attributes.
#pragma once

#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// One numeric input x and output y of its dtype; attribute 'axes' sorted, unique, non-empty;
// y of x's shape without (or, with 'keepdims', with 1 in) the reduced dims. Returns which dims
// of x are reduced and the number of x elements folded into each y element.
Status checkReduce(const char *kernel, const KernelArgs &args, std::vector<bool> *reduced,
                   int64_t *groupSize);

// arg_max(x) -> y: x numeric, y i64 of x's shape without (or, with 'keepdims', with 1 in) dim
// 'axis'; attribute 'select_last_index' 0 or 1. Returns the axis and the flags.
Status checkArgMax(const KernelArgs &args, int64_t *axis, bool *selectLast);

// The reduction's 'axes' rules (non-empty, in range, sorted, unique) over a tensor of `shape`:
// which dims are reduced, and the reduced tensor's shape (1 in the reduced dims with
// `keepdims`, else without them). Shared by the reductions and reduce_max_grad.
Status planReducedShape(const char *kernel, const std::vector<int64_t> &shape,
                        const std::vector<int64_t> &axes, bool keepdims,
                        std::vector<bool> *reduced, std::vector<int64_t> *reducedShape);

} // namespace shardc::runtime::cpu
