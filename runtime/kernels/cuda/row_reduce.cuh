// Block-wide reductions of the row kernels (softmax, layer_norm, the losses): a warp-shuffle
// tree, then one value per warp through shared memory. The order of the additions depends only
// on blockDim, so results are deterministic run to run.
#pragma once

#include "runtime/kernels/cuda/cuda_common.cuh"

namespace shardc::runtime::cuda {

// Threads per block for a row of `n` elements: a whole number of warps, no more than the row
// needs (short rows keep most threads busy), at most 256 (plenty for bandwidth-bound rows).
inline int rowBlock(int64_t n) {
  const int64_t warps = (n + 31) / 32;
  return static_cast<int>(32 * (warps < 1 ? 1 : (warps > 8 ? 8 : warps)));
}

// Grid of a row kernel: one block per row, the rows beyond it taken by a block-stride loop.
inline unsigned rowGrid(int64_t rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > 65535 * 8 ? 65535 * 8 : rows));
}

struct SumOp {
  template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
// Lets a NaN win, as the CPU's running maximum does (a NaN poisons its row).
struct NanMaxOp {
  __device__ float operator()(float m, float v) const { return (v > m || v != v) ? v : m; }
};

template <typename T, typename Op> __device__ inline T warpReduce(T v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The reduction of every thread's `v` over the block, returned to every thread. Every thread of
// the block must call it (blockDim.x a multiple of 32, at most 1024); `identity` fills the
// missing warps.
template <typename T, typename Op> __device__ inline T blockReduce(T v, Op op, T identity) {
  __shared__ T partial[32];
  __shared__ T result;
  v = warpReduce(v, op);
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x + 31) >> 5;
  __syncthreads(); // a previous call's readers of `result` are done before it is overwritten
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? partial[lane] : identity;
    w = warpReduce(w, op);
    if (lane == 0)
      result = w;
  }
  __syncthreads();
  return result;
}

} // namespace shardc::runtime::cuda
