// The CUDA kernel table: the kernels with a CUDA implementation so far. A program using any
// other kernel is refused on --device cuda before it runs, naming the kernel.
#include "runtime/kernels/cuda/cuda_kernels.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace shardc::runtime::cuda {

namespace {

struct KernelEntry {
  const char *name;
  KernelFn fn;
  WorkspaceFn workspace = nullptr; // null: the kernel needs no workspace
};

// Sorted by name (checked by the unit tests), so lookups can binary-search.
constexpr KernelEntry kCudaKernels[] = {
    {"abs", absKernel},
    {"adamw_update", adamwUpdateKernel},
    {"add", addKernel},
    {"and", andKernel},
    {"cast", castKernel},
    {"concat", concatKernel},
    {"copy", copyKernel},
    {"cos", cosKernel},
    {"div", divKernel},
    {"equal", equalKernel},
    {"erf", erfKernel},
    {"exp", expKernel},
    {"expand", expandKernel},
    {"gather", gatherKernel, gatherWorkspace},
    {"gather_grad", gatherGradKernel, gatherGradWorkspace},
    {"gelu", geluKernel},
    {"gemm", gemmKernel, gemmWorkspace},
    {"greater", greaterKernel},
    {"layer_norm", layerNormKernel, layerNormWorkspace},
    {"layer_norm_grad", layerNormGradKernel, layerNormGradWorkspace},
    {"less", lessKernel},
    {"log", logKernel},
    {"log_softmax", logSoftmaxKernel},
    {"log_softmax_grad", logSoftmaxGradKernel},
    {"matmul", matmulKernel, matmulWorkspace},
    {"max", maxKernel},
    {"min", minKernel},
    {"mul", mulKernel},
    {"neg", negKernel},
    {"nll_loss", nllLossKernel},
    {"nll_loss_grad", nllLossGradKernel, nllLossGradWorkspace},
    {"not", notKernel},
    {"or", orKernel},
    {"pow", powKernel},
    {"reciprocal", reciprocalKernel},
    {"reduce_max", reduceMaxKernel},
    {"reduce_mean", reduceMeanKernel},
    {"reduce_sum", reduceSumKernel},
    {"relu", reluKernel},
    {"sgd_update", sgdUpdateKernel},
    {"sigmoid", sigmoidKernel},
    {"sin", sinKernel},
    {"slice", sliceKernel},
    {"softmax", softmaxKernel},
    {"softmax_cross_entropy_loss", softmaxCrossEntropyLossKernel,
     softmaxCrossEntropyLossWorkspace},
    {"softmax_cross_entropy_loss_grad", softmaxCrossEntropyLossGradKernel,
     softmaxCrossEntropyLossGradWorkspace},
    {"softmax_grad", softmaxGradKernel},
    {"split", splitKernel},
    {"sqrt", sqrtKernel},
    {"sub", subKernel},
    {"tanh", tanhKernel},
    {"transpose", transposeKernel},
    {"trilu", triluKernel},
    {"where", whereKernel},
};

const KernelEntry *findEntry(const std::string &name) {
  const auto *end = std::end(kCudaKernels);
  const auto *it = std::lower_bound(std::begin(kCudaKernels), end, name,
                                    [](const KernelEntry &e, const std::string &n) {
                                      return std::strcmp(e.name, n.c_str()) < 0;
                                    });
  if (it == end || name != it->name)
    return nullptr;
  return it;
}

} // namespace

KernelFn findKernel(const std::string &name) {
  const KernelEntry *entry = findEntry(name);
  return entry ? entry->fn : nullptr;
}

Status kernelWorkspaceBytes(const std::string &name, const KernelArgs &args, uint64_t *bytes) {
  const KernelEntry *entry = findEntry(name);
  if (entry == nullptr)
    return Status::error("kernel '" + name + "' has no cuda implementation");
  *bytes = 0;
  return entry->workspace ? entry->workspace(args, bytes) : Status::ok();
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> names;
  for (const KernelEntry &entry : kCudaKernels)
    names.emplace_back(entry.name);
  return names;
}

} // namespace shardc::runtime::cuda
