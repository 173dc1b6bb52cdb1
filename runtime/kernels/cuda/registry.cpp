// The CUDA kernel table: the kernels with a CUDA implementation so far. A program using any
// other kernel is refused on --device cuda before it runs, naming the kernel.
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/kernels/kernel_def_columns.h"
#include "runtime/kernels/kernel_entry.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace shardc::runtime::cuda {

namespace {

// Sorted by name (kernels.def is; checked by the unit tests), so lookups can binary-search.
constexpr KernelEntry kCudaKernels[] = {
#define SHARDC_KERNEL(name, function, cpuWorkspace, cuda, cudaWorkspace, traits)                 \
  SHARDC_KERNEL_IF_CUDA_##cuda({name, function, SHARDC_KERNEL_WORKSPACE_##cudaWorkspace}, )
#include "runtime/kernels/kernels.def"
};

} // namespace

KernelFn findKernel(const std::string &name) {
  const KernelEntry *entry = findKernelEntry(kCudaKernels, name);
  return entry ? entry->fn : nullptr;
}

Status kernelWorkspaceBytes(const std::string &name, const KernelArgs &args, uint64_t *bytes) {
  const KernelEntry *entry = findKernelEntry(kCudaKernels, name);
  if (entry == nullptr)
    return Status::error("kernel '" + name + "' has no cuda implementation");
  return entryWorkspaceBytes(*entry, args, bytes);
}

std::vector<std::string> kernelNames() { return kernelEntryNames(kCudaKernels); }

} // namespace shardc::runtime::cuda
