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

} // namespace shardc::runtime::cuda
