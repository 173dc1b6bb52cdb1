// NumPy broadcasting, and more generally any walk of an output tensor in row-major order where
// each operand is read through its own per-dimension strides. Broadcasting is the case of
// stride 0 on broadcast dims; transpose and slice build their loops with permuted or stepped
// strides and reuse the same walker.
#pragma once

#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/kernel.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace shardc::runtime::cpu {

constexpr int kMaxLoopOperands = 3; // `where` reads three operands

// A row-major walk over the output's elements. For every output dim, each operand has an
// element stride (0 where it is broadcast, negative for reversed slices). After `coalesce`,
// dims of size 1 are gone and adjacent dims that every operand walks contiguously are merged,
// so the innermost dim is as long as possible.
struct StridedLoop {
  int numOperands = 0;
  std::vector<int64_t> dims; // never empty: a scalar walk is one dim of size 1
  std::array<std::vector<int64_t>, kMaxLoopOperands> strides;
  std::array<int64_t, kMaxLoopOperands> baseOffsets{}; // element offset of the first element read

  int64_t numel() const;
  // Drops size-1 dims and merges contiguous runs; keeps the walk order.
  void coalesce();
};

// A walk over `shape` in memory order whose single operand indexes the reduced tensor: stride 0
// along the `reduced` dims, the reduced tensor's contiguous stride elsewhere (keepdims does not
// change that layout). Used by the reductions and their backwards. Coalesced.
StridedLoop planReductionWalk(const std::vector<int64_t> &shape, const std::vector<bool> &reduced);

// The NumPy broadcast of two shapes, or an error when a dim pair is neither equal nor 1.
Status broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                       std::vector<int64_t> *out);

// Plans reading each of `inputs` broadcast (unidirectionally) to `outShape`: every input's dims,
// aligned to the right, must be equal to the output's or 1. The loop is coalesced.
Status planBroadcast(const std::vector<const std::vector<int64_t> *> &inputs,
                     const std::vector<int64_t> &outShape, StridedLoop *loop);

// For elementwise kernels: checks that `output`'s shape is exactly the multidirectional
// broadcast of the inputs' shapes, then plans the walk.
Status planElementwise(const char *kernel, std::initializer_list<const Tensor *> inputs,
                       const Tensor &output, StridedLoop *loop);

// Calls `row(outOffset, inOffsets, inStrides, count)` for every innermost row of the walk:
// output elements [outOffset, outOffset + count) read operand k at
// inOffsets[k] + i * inStrides[k]. Offsets are in elements.
// forEachRow over rows [firstRow, lastRow) of the walk only (a row: its innermost dim).
template <typename RowFn>
void forEachRowIn(const StridedLoop &loop, int64_t firstRow, int64_t lastRow, RowFn &&row) {
  if (loop.numel() == 0 || firstRow >= lastRow)
    return;
  const int numOps = loop.numOperands;
  const size_t rank = loop.dims.size();
  const int64_t inner = loop.dims.back();
  std::array<int64_t, kMaxLoopOperands> offsets = loop.baseOffsets;
  std::array<int64_t, kMaxLoopOperands> innerStrides{};
  for (int k = 0; k < numOps; ++k)
    innerStrides[k] = loop.strides[k].back();
  // The odometer at row firstRow.
  std::vector<int64_t> counter(rank, 0);
  for (size_t d = rank - 1, left = static_cast<size_t>(firstRow); d-- > 0;) {
    counter[d] = static_cast<int64_t>(left % static_cast<size_t>(loop.dims[d]));
    left /= static_cast<size_t>(loop.dims[d]);
    for (int k = 0; k < numOps; ++k)
      offsets[k] += counter[d] * loop.strides[k][d];
  }
  int64_t outOffset = firstRow * inner;
  for (int64_t r = firstRow;;) {
    row(outOffset, offsets.data(), innerStrides.data(), inner);
    outOffset += inner;
    if (++r == lastRow)
      return;
    // Advance the odometer over the outer dims.
    for (size_t d = rank - 1; d-- > 0;) {
      if (++counter[d] < loop.dims[d]) {
        for (int k = 0; k < numOps; ++k)
          offsets[k] += loop.strides[k][d];
        break;
      }
      for (int k = 0; k < numOps; ++k)
        offsets[k] -= loop.strides[k][d] * (loop.dims[d] - 1);
      counter[d] = 0;
    }
  }
}

template <typename RowFn> void forEachRow(const StridedLoop &loop, RowFn &&row) {
  const int64_t inner = loop.dims.back();
  forEachRowIn(loop, 0, inner == 0 ? 0 : loop.numel() / inner, row);
}

// forEachRow with the rows split over the kernel threads, for a `row` that writes its own
// output elements only.
template <typename RowFn> void forEachRowInParallel(const StridedLoop &loop, RowFn &&row) {
  const int64_t inner = loop.dims.back();
  if (inner == 0)
    return;
  parallelFor(loop.numel() / inner, kElementsPerThread / inner,
              [&](int64_t first, int64_t last) { forEachRowIn(loop, first, last, row); });
}

// Copies the elements the single-operand `loop` reads from `src` into contiguous `dst`.
template <typename T> void copyStrided(const T *src, T *dst, const StridedLoop &loop) {
  forEachRowInParallel(loop, [&](int64_t outOffset, const int64_t *inOffsets,
                                 const int64_t *inStrides, int64_t count) {
    const T *in = src + inOffsets[0];
    T *out = dst + outOffset;
    const int64_t stride = inStrides[0];
    if (stride == 1) {
      for (int64_t i = 0; i < count; ++i)
        out[i] = in[i];
    } else if (stride == 0) {
      const T v = in[0];
      for (int64_t i = 0; i < count; ++i)
        out[i] = v;
    } else {
      for (int64_t i = 0; i < count; ++i)
        out[i] = in[i * stride];
    }
  });
}

} // namespace shardc::runtime::cpu
