// The CPU kernel table. It is an explicit list rather than self-registration from static
// initialisers because the kernels live in a static library, where the linker drops object
// files nothing references (and their registrations with them).
#include "runtime/kernels/cpu/cpu_kernels.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace shardc::runtime {

namespace {

struct KernelEntry {
  const char *name;
  KernelFn fn;
};

// Sorted by name (checked by the unit tests), so lookups can binary-search.
constexpr KernelEntry kCpuKernels[] = {
    {"abs", cpu::absKernel},
    {"add", cpu::addKernel},
    {"and", cpu::andKernel},
    {"cast", cpu::castKernel},
    {"clip", cpu::clipKernel},
    {"concat", cpu::concatKernel},
    {"copy", cpu::copyKernel},
    {"div", cpu::divKernel},
    {"equal", cpu::equalKernel},
    {"erf", cpu::erfKernel},
    {"exp", cpu::expKernel},
    {"expand", cpu::expandKernel},
    {"gather", cpu::gatherKernel},
    {"gelu", cpu::geluKernel},
    {"gemm", cpu::gemmKernel},
    {"greater", cpu::greaterKernel},
    {"layer_norm", cpu::layerNormKernel},
    {"less", cpu::lessKernel},
    {"log", cpu::logKernel},
    {"log_softmax", cpu::logSoftmaxKernel},
    {"matmul", cpu::matmulKernel},
    {"max", cpu::maxKernel},
    {"min", cpu::minKernel},
    {"mul", cpu::mulKernel},
    {"neg", cpu::negKernel},
    {"nll_loss", cpu::nllLossKernel},
    {"not", cpu::notKernel},
    {"or", cpu::orKernel},
    {"pow", cpu::powKernel},
    {"reciprocal", cpu::reciprocalKernel},
    {"reduce_max", cpu::reduceMaxKernel},
    {"reduce_mean", cpu::reduceMeanKernel},
    {"reduce_sum", cpu::reduceSumKernel},
    {"relu", cpu::reluKernel},
    {"sigmoid", cpu::sigmoidKernel},
    {"slice", cpu::sliceKernel},
    {"softmax", cpu::softmaxKernel},
    {"softmax_cross_entropy_loss", cpu::softmaxCrossEntropyLossKernel},
    {"split", cpu::splitKernel},
    {"sqrt", cpu::sqrtKernel},
    {"sub", cpu::subKernel},
    {"tanh", cpu::tanhKernel},
    {"transpose", cpu::transposeKernel},
    {"trilu", cpu::triluKernel},
    {"where", cpu::whereKernel},
};

} // namespace

KernelFn findCpuKernel(const std::string &name) {
  const auto *end = std::end(kCpuKernels);
  const auto *it = std::lower_bound(std::begin(kCpuKernels), end, name,
                                    [](const KernelEntry &e, const std::string &n) {
                                      return std::strcmp(e.name, n.c_str()) < 0;
                                    });
  if (it == end || name != it->name)
    return nullptr;
  return it->fn;
}

std::vector<std::string> cpuKernelNames() {
  std::vector<std::string> names;
  for (const KernelEntry &e : kCpuKernels)
    names.emplace_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace shardc::runtime
