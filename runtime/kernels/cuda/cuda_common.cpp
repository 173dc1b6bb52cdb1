#include "runtime/kernels/cuda/cuda_common.cuh"

namespace shardc::runtime::cuda {

Status cudaStatus(const char *kernel, const char *what, cudaError_t error) {
  if (error == cudaSuccess)
    return Status::ok();
  return Status::error(std::string(kernel) + ": " + what + " failed: " + cudaGetErrorName(error) +
                       ": " + cudaGetErrorString(error));
}

Status toDeviceLoop(const char *kernel, const cpu::StridedLoop &loop, DeviceLoop *out) {
  const size_t rank = loop.dims.size();
  if (rank > static_cast<size_t>(kMaxLoopDims))
    return Status::error(std::string(kernel) + ": the cuda kernels walk at most " +
                         std::to_string(kMaxLoopDims) + " dims after merging, this needs " +
                         std::to_string(rank));
  out->rank = static_cast<int>(rank);
  out->numel = loop.numel();
  for (size_t d = 0; d < rank; ++d) {
    out->dims[d] = loop.dims[d];
    for (int k = 0; k < loop.numOperands; ++k)
      out->strides[k][d] = loop.strides[k][d];
  }
  for (int k = 0; k < loop.numOperands; ++k)
    out->base[k] = loop.baseOffsets[k];
  return Status::ok();
}

} // namespace shardc::runtime::cuda
