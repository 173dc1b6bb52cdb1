// The CUDA kernel table: the kernels with a CUDA implementation so far. A program using any
// other kernel is refused on --device cuda before it runs, naming the kernel.
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/kernels/kernel_entry.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace shardc::runtime::cuda {

namespace {

// Sorted by name (checked by the unit tests), so lookups can binary-search.
constexpr KernelEntry kCudaKernels[] = {
    {"abs", absKernel},
    {"adamw_update", adamwUpdateKernel},
    {"add", addKernel},
    {"all_gather", allGatherKernel},
    {"all_reduce", allReduceKernel},
    {"and", andKernel},
    {"arg_max", argMaxKernel},
    {"attention", attentionKernel},
    {"attention_grad", attentionGradKernel},
    {"cast", castKernel},
    {"clip", clipKernel},
    {"concat", concatKernel},
    {"copy", copyKernel},
    {"cos", cosKernel},
    {"cum_sum", cumSumKernel},
    {"div", divKernel},
    {"dropout", dropoutKernel},
    {"equal", equalKernel},
    {"erf", erfKernel},
    {"exp", expKernel},
    {"expand", expandKernel},
    {"gather", gatherKernel, gatherWorkspace},
    {"gather_grad", gatherGradKernel, gatherGradWorkspace},
    {"gelu", geluKernel},
    {"gelu_grad", geluGradKernel},
    {"gemm", gemmKernel, gemmWorkspace},
    {"global_norm", globalNormKernel, globalNormWorkspace},
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
    {"mod", modKernel},
    {"mul", mulKernel},
    {"neg", negKernel},
    {"nll_loss", nllLossKernel},
    {"nll_loss_grad", nllLossGradKernel, nllLossGradWorkspace},
    {"not", notKernel},
    {"or", orKernel},
    {"pad", padKernel},
    {"pad_for_slice", padForSliceKernel},
    {"pow", powKernel},
    {"reciprocal", reciprocalKernel},
    {"reduce_max", reduceMaxKernel},
    {"reduce_max_grad", reduceMaxGradKernel, reduceMaxGradWorkspace},
    {"reduce_mean", reduceMeanKernel},
    {"reduce_scatter", reduceScatterKernel},
    {"reduce_sum", reduceSumKernel},
    {"relu", reluKernel},
    {"scale_by_clip", scaleByClipKernel},
    {"scatter_nd", scatterNdKernel, scatterNdWorkspace},
    {"sgd_update", sgdUpdateKernel},
    {"shard_slice", shardSliceKernel},
    {"sigmoid", sigmoidKernel},
    {"sin", sinKernel},
    {"slice", sliceKernel},
    {"softmax", softmaxKernel},
    {"softmax_cross_entropy_loss", softmaxCrossEntropyLossKernel,
     softmaxCrossEntropyLossWorkspace},
    {"softmax_cross_entropy_loss_grad", softmaxCrossEntropyLossGradKernel,
     softmaxCrossEntropyLossGradWorkspace},
    {"softmax_grad", softmaxGradKernel},
    {"softplus", softplusKernel},
    {"split", splitKernel},
    {"sqrt", sqrtKernel},
    {"sub", subKernel},
    {"tanh", tanhKernel},
    {"transpose", transposeKernel},
    {"trilu", triluKernel},
    {"where", whereKernel},
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
