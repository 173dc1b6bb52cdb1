// The kernels' traits (kernel_traits.h), and the questions kernel.h answers from them.
#include "runtime/kernels/kernel_traits.h"

#include "runtime/kernels/kernel.h"

#include <algorithm>
#include <iterator>

namespace shardc::runtime {

namespace {

struct KernelTraitsEntry {
  std::string_view name;
  unsigned traits;
};

// Every kernel, sorted by name as kernels.def is.
constexpr KernelTraitsEntry kKernelTraits[] = {
#define SHARDC_KERNEL(name, function, cpuWorkspace, cuda, cudaWorkspace, traits) {name, traits},
#include "runtime/kernels/kernels.def"
};

} // namespace

unsigned kernelTraits(std::string_view name) {
  const auto *it = std::lower_bound(
      std::begin(kKernelTraits), std::end(kKernelTraits), name,
      [](const KernelTraitsEntry &e, std::string_view n) { return e.name < n; });
  return it != std::end(kKernelTraits) && it->name == name ? it->traits : 0;
}

bool isCollectiveKernel(const std::string &kernel) {
  return kernelHasTrait(kernel, kCollectiveKernel);
}

bool kernelMovesDataBetweenRanks(const std::string &kernel) {
  return kernelHasTrait(kernel, kMovesDataBetweenRanks);
}

} // namespace shardc::runtime
