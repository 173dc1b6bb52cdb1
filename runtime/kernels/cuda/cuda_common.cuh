// What every CUDA kernel file shares: the stream from KernelArgs, launch checking, grid sizing,
// element types, and the broadcast walk (cpu::StridedLoop, planned by the shared checks) in a
// form device code can index.
#pragma once

#include "runtime/kernels/cpu/broadcast.h"
#include "runtime/kernels/kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace shardc::runtime::cuda {

inline cudaStream_t streamOf(const KernelArgs &args) {
  return static_cast<cudaStream_t>(args.stream);
}

// A CUDA runtime call's error as a Status naming the kernel and what it was doing
// ("<kernel>: <what> failed: <error name>: <description>"); ok for cudaSuccess.
Status cudaStatus(const char *kernel, const char *what, cudaError_t error);

// The error of the launch just made (a bad configuration, a missing kernel image for this GPU)
// as a Status naming the kernel. Errors inside the kernel surface at the next synchronisation.
inline Status launchStatus(const char *kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess)
    return Status::ok();
  return Status::error(std::string(kernel) + ": cuda launch failed: " + cudaGetErrorName(error) +
                       ": " + cudaGetErrorString(error));
}

constexpr int kBlock = 256;

// Blocks for a grid-stride loop over n elements: enough to fill any current GPU, never more
// than needed.
inline unsigned gridFor(int64_t n, int block = kBlock) {
  const int64_t blocks = (n + block - 1) / block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

#define SHARDC_GRID_STRIDE(i, n)                                                                  \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);        \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// Element types by dtype: bool is one byte (uint8_t), bf16/f16 are CUDA's own types.
using bf16 = __nv_bfloat16;
using f16 = __half;

// A cpu::StridedLoop flattened into fixed arrays, passed to kernels by value.
constexpr int kMaxLoopDims = 8;
struct DeviceLoop {
  int rank = 0;
  int64_t numel = 0;
  int64_t dims[kMaxLoopDims] = {};
  int64_t strides[cpu::kMaxLoopOperands][kMaxLoopDims] = {};
  int64_t base[cpu::kMaxLoopOperands] = {};
};

// Fails (naming the kernel) only for walks of more than kMaxLoopDims dims after coalescing.
Status toDeviceLoop(const char *kernel, const cpu::StridedLoop &loop, DeviceLoop *out);

// The element offset operand k reads for output element i (row-major over the walk).
template <int Operands>
__device__ inline void loopOffsets(const DeviceLoop &loop, int64_t i, int64_t (&offsets)[Operands]) {
#pragma unroll
  for (int k = 0; k < Operands; ++k)
    offsets[k] = loop.base[k];
  for (int d = loop.rank - 1; d >= 0; --d) {
    const int64_t coordinate = i % loop.dims[d];
    i /= loop.dims[d];
#pragma unroll
    for (int k = 0; k < Operands; ++k)
      offsets[k] += coordinate * loop.strides[k][d];
  }
}

// ---- the elementwise fast paths ---------------------------------------------------------------
// Most elementwise walks need none of DeviceLoop's generality: after coalescing they are one dim
// (every operand the output's shape or a single element) or two (an operand broadcast along the
// leading dims, or along the last). A RowsLoop is such a walk as [rows, rowLength]: element i is
// (row, column) = (i / rowLength, i % rowLength), and operand k reads
// row * rowStride[k] + (contiguous[k] ? column : 0). That costs at most one division per element
// (none for one dim) where loopOffsets pays two per dim.
template <int Operands> struct RowsLoop {
  int64_t numel = 0;
  int64_t rowLength = 0; // the innermost dim: numel when the walk is one dim
  int64_t rowStride[Operands] = {};
  bool contiguous[Operands] = {}; // walks its row element by element, else reads one per row
};

// The RowsLoop of a (coalesced) plan, or false when the plan has more than two dims, a base
// offset, or an operand whose innermost stride is neither 0 nor 1: the general kernels take
// those.
template <int Operands> inline bool toRowsLoop(const cpu::StridedLoop &plan, RowsLoop<Operands> *out) {
  const size_t rank = plan.dims.size();
  if (rank < 1 || rank > 2 || plan.numOperands != Operands)
    return false;
  RowsLoop<Operands> loop;
  loop.numel = plan.numel();
  loop.rowLength = plan.dims.back();
  for (int k = 0; k < Operands; ++k) {
    const int64_t columnStride = plan.strides[k].back();
    if (plan.baseOffsets[k] != 0 || (columnStride != 0 && columnStride != 1))
      return false;
    loop.contiguous[k] = columnStride == 1;
    loop.rowStride[k] = rank == 2 ? plan.strides[k][0] : 0;
  }
  *out = loop;
  return true;
}

// Elements per vector access of the fast paths (16 bytes of f32), and the vector itself: one
// load or store of sizeof(T) * N bytes, which needs its address aligned to that.
constexpr int kPack = 4;
template <typename T, int N> struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

inline bool packAligned(const void *p, size_t elementSize) {
  return reinterpret_cast<uintptr_t>(p) % (elementSize * kPack) == 0;
}

// Whether a RowsLoop's geometry allows whole packs: no pack straddles two rows (the rows hold
// whole packs, or there is one row, whose last partial pack the kernels finish element by
// element), and every contiguous operand's rows start on a pack boundary. Each contiguous
// operand's pointer, and the output's, must also be packAligned.
template <int Operands> inline bool rowsPackable(const RowsLoop<Operands> &loop) {
  if (loop.rowLength != loop.numel && loop.rowLength % kPack != 0)
    return false;
  for (int k = 0; k < Operands; ++k)
    if (loop.contiguous[k] && loop.rowStride[k] % kPack != 0)
      return false;
  return true;
}

// Row and column of element i; a 32-bit division when both fit (several times cheaper than a
// 64-bit one), none for a one-dim walk.
template <int Operands>
__device__ inline void rowAndColumn(const RowsLoop<Operands> &loop, int64_t i, int64_t *row,
                                    int64_t *column) {
  if (loop.rowLength == loop.numel) {
    *row = 0;
    *column = i;
  } else if (((i | loop.rowLength) >> 32) == 0) {
    const uint32_t q = static_cast<uint32_t>(i) / static_cast<uint32_t>(loop.rowLength);
    *row = q;
    *column = i - static_cast<int64_t>(q) * loop.rowLength;
  } else {
    *row = i / loop.rowLength;
    *column = i - *row * loop.rowLength;
  }
}

// Operand k's element at (row, column).
template <int Operands, typename T>
__device__ inline T loadElement(const T *p, const RowsLoop<Operands> &loop, int k, int64_t row,
                                int64_t column) {
  return p[row * loop.rowStride[k] + (loop.contiguous[k] ? column : 0)];
}

// Operand k's N elements from (row, column) on, within the row: one vector load for a
// contiguous operand (rowsPackable and packAligned make it aligned), else its row's one element
// N times.
template <int N, int Operands, typename T>
__device__ inline Pack<T, N> loadPack(const T *p, const RowsLoop<Operands> &loop, int k,
                                      int64_t row, int64_t column) {
  const T *at = p + row * loop.rowStride[k];
  if (loop.contiguous[k])
    return *reinterpret_cast<const Pack<T, N> *>(at + column);
  Pack<T, N> pack;
  const T v = *at;
#pragma unroll
  for (int u = 0; u < N; ++u)
    pack.v[u] = v;
  return pack;
}

} // namespace shardc::runtime::cuda
