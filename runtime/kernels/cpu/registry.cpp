// The CPU kernel table. It is an explicit list rather than self-registration from static
// initialisers because the kernels live in a static library, where the linker drops object
// files nothing references (and their registrations with them).
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/kernel_def_columns.h"
#include "runtime/kernels/kernel_entry.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace shardc::runtime {

namespace cpu {
namespace {

// Sorted by name (kernels.def is; checked by the unit tests), so lookups can binary-search.
constexpr KernelEntry kCpuKernels[] = {
#define SHARDC_KERNEL(name, function, cpuWorkspace, cuda, cudaWorkspace, traits)                 \
  {name, function, SHARDC_KERNEL_WORKSPACE_##cpuWorkspace},
#include "runtime/kernels/kernels.def"
};

} // namespace
} // namespace cpu

namespace {

using cpu::kCpuKernels;

// The (input, output) pairs a kernel may update in place (kernelUpdatesInPlace).
struct InPlacePair {
  const char *kernel;
  int input, output;
};
constexpr InPlacePair kInPlacePairs[] = {
#define SHARDC_KERNEL_IN_PLACE(name, input, output) {name, input, output},
#include "runtime/kernels/kernels.def"
};

} // namespace

KernelFn findCpuKernel(const std::string &name) {
  const KernelEntry *entry = findKernelEntry(kCpuKernels, name);
  return entry ? entry->fn : nullptr;
}

Status cpuKernelWorkspaceBytes(const std::string &name, const KernelArgs &args, uint64_t *bytes) {
  const KernelEntry *entry = findKernelEntry(kCpuKernels, name);
  if (entry == nullptr)
    return Status::error("unknown kernel '" + name + "'");
  return entryWorkspaceBytes(*entry, args, bytes);
}

bool kernelUpdatesInPlace(const std::string &name, int input, int output) {
  for (const InPlacePair &pair : kInPlacePairs)
    if (name == pair.kernel && input == pair.input && output == pair.output)
      return true;
  return false;
}

std::vector<std::string> cpuKernelNames() {
  return kernelEntryNames(kCpuKernels);
}

} // namespace shardc::runtime
