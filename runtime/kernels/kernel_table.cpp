// The kernel tables by device: the CPU's always, the CUDA one when the build has it.
#include "runtime/kernels/kernel.h"

#ifdef SHARDC_HAVE_CUDA_KERNELS
#include "runtime/kernels/cuda/cuda_kernels.h"
#endif

namespace shardc::runtime {

KernelFn findKernel(DeviceKind device, const std::string &name) {
  switch (device) {
  case DeviceKind::Cpu:
    return findCpuKernel(name);
  case DeviceKind::Cuda:
#ifdef SHARDC_HAVE_CUDA_KERNELS
    return cuda::findKernel(name);
#else
    return nullptr;
#endif
  }
  return nullptr;
}

Status kernelWorkspaceBytes(DeviceKind device, const std::string &name, const KernelArgs &args,
                            uint64_t *bytes) {
  switch (device) {
  case DeviceKind::Cpu:
    return cpuKernelWorkspaceBytes(name, args, bytes);
  case DeviceKind::Cuda:
#ifdef SHARDC_HAVE_CUDA_KERNELS
    return cuda::kernelWorkspaceBytes(name, args, bytes);
#else
    break;
#endif
  }
  return Status::error("kernel '" + name + "': this build has no " + deviceKindName(device) +
                       " kernels");
}

std::vector<std::string> kernelNames(DeviceKind device) {
  switch (device) {
  case DeviceKind::Cpu:
    return cpuKernelNames();
  case DeviceKind::Cuda:
#ifdef SHARDC_HAVE_CUDA_KERNELS
    return cuda::kernelNames();
#else
    break;
#endif
  }
  return {};
}

} // namespace shardc::runtime
