// The contracts of pad, pad_for_slice, cum_sum and scatter_nd, written once for every device:
// the CPU and CUDA kernels of a name call the same check, which reads only dtypes, shapes and
// attributes (scatter_nd's tuple offsets excepted, which read host-readable indices), and plans
// the walk both devices then follow, so both give the same results and error messages.
#pragma once

#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <vector>

namespace shardc::runtime::cpu {

// pad(x) -> y: 'pads' (2 per dim, begins then ends, negative crops) and the fill 'value'.
Status checkPad(const KernelArgs &args, std::vector<int64_t> *pads, double *value);
// The block of x that lands in y: operand 0 walks x, operand 1 the place in y (coalesced).
// False when no element of x lands in y (y is all fill).
bool planPad(const Tensor &x, const Tensor &y, const std::vector<int64_t> &pads,
             StridedLoop *loop);

// pad_for_slice(dy) -> dx: the backward of slice ('starts', 'steps' per dim). The walk's single
// operand is where each element of dy (in order) lands in dx.
Status planPadForSlice(const KernelArgs &args, StridedLoop *loop);

// cum_sum(x) -> y: numeric x, y like x, 'axis' in range, 'exclusive' and 'reverse' flags.
Status checkCumSum(const KernelArgs &args, int64_t *axis, bool *exclusive, bool *reverse);

// scatter_nd(data, indices, updates) -> y.
enum class ScatterCombine { kNone, kAdd, kMul, kMax, kMin };
struct ScatterNdPlan {
  ScatterCombine combine = ScatterCombine::kNone;
  int64_t k = 0;      // the length of an index tuple
  int64_t tuples = 0; // how many tuples
  int64_t slice = 0;  // elements of data each tuple addresses
};
Status checkScatterNd(const KernelArgs &args, ScatterNdPlan *plan);
// The flat offset in data of tuple t's slice (negative indices count from the end), or the
// out-of-range error; `indices` must be readable by the host.
Status scatterNdTupleOffset(const ScatterNdPlan &plan, const Tensor &data, const Tensor &indices,
                            int64_t t, int64_t *offset);

} // namespace shardc::runtime::cpu
