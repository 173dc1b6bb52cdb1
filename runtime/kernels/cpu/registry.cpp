// The CPU kernel table. It is an explicit list rather than self-registration from static
// initialisers because the kernels live in a static library, where the linker drops object
// files nothing references (and their registrations with them).
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/kernel_entry.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace shardc::runtime {

namespace {

// Sorted by name (checked by the unit tests), so lookups can binary-search.
constexpr KernelEntry kCpuKernels[] = {
    {"abs", cpu::absKernel},
    {"adamw_update", cpu::adamwUpdateKernel},
    {"add", cpu::addKernel},
    {"all_gather", cpu::allGatherKernel, cpu::allGatherWorkspace},
    {"all_reduce", cpu::allReduceKernel, cpu::allReduceWorkspace},
    {"and", cpu::andKernel},
    {"arg_max", cpu::argMaxKernel},
    {"attention", cpu::attentionKernel, cpu::attentionWorkspace},
    {"attention_grad", cpu::attentionGradKernel, cpu::attentionGradWorkspace},
    {"avg_pool", cpu::avgPoolKernel},
    {"avg_pool_grad", cpu::avgPoolGradKernel},
    {"cast", cpu::castKernel},
    {"clip", cpu::clipKernel},
    {"concat", cpu::concatKernel},
    {"conv", cpu::convKernel, cpu::convWorkspace},
    {"conv_grad_input", cpu::convGradInputKernel, cpu::convGradInputWorkspace},
    {"conv_grad_weight", cpu::convGradWeightKernel, cpu::convGradWeightWorkspace},
    {"copy", cpu::copyKernel},
    {"cos", cpu::cosKernel},
    {"cum_sum", cpu::cumSumKernel},
    {"div", cpu::divKernel},
    {"dropout", cpu::dropoutKernel},
    {"equal", cpu::equalKernel},
    {"erf", cpu::erfKernel},
    {"exp", cpu::expKernel},
    {"expand", cpu::expandKernel},
    {"gather", cpu::gatherKernel, cpu::gatherWorkspace},
    {"gather_grad", cpu::gatherGradKernel, cpu::gatherGradWorkspace},
    {"gelu", cpu::geluKernel},
    {"gelu_grad", cpu::geluGradKernel},
    {"gemm", cpu::gemmKernel, cpu::gemmWorkspace},
    {"global_norm", cpu::globalNormKernel, cpu::globalNormWorkspace},
    {"greater", cpu::greaterKernel},
    {"layer_norm", cpu::layerNormKernel, cpu::layerNormWorkspace},
    {"layer_norm_grad", cpu::layerNormGradKernel, cpu::layerNormGradWorkspace},
    {"less", cpu::lessKernel},
    {"log", cpu::logKernel},
    {"log_softmax", cpu::logSoftmaxKernel, cpu::logSoftmaxWorkspace},
    {"log_softmax_grad", cpu::logSoftmaxGradKernel, cpu::logSoftmaxGradWorkspace},
    {"matmul", cpu::matmulKernel, cpu::matmulWorkspace},
    {"max", cpu::maxKernel},
    {"max_pool", cpu::maxPoolKernel},
    {"max_pool_grad", cpu::maxPoolGradKernel},
    {"min", cpu::minKernel},
    {"mod", cpu::modKernel},
    {"mul", cpu::mulKernel},
    {"neg", cpu::negKernel},
    {"nll_loss", cpu::nllLossKernel},
    {"nll_loss_grad", cpu::nllLossGradKernel, cpu::nllLossGradWorkspace},
    {"not", cpu::notKernel},
    {"or", cpu::orKernel},
    {"pad", cpu::padKernel},
    {"pad_for_slice", cpu::padForSliceKernel},
    {"pow", cpu::powKernel},
    {"reciprocal", cpu::reciprocalKernel},
    {"reduce_max", cpu::reduceMaxKernel, cpu::reduceMaxWorkspace},
    {"reduce_max_grad", cpu::reduceMaxGradKernel, cpu::reduceMaxGradWorkspace},
    {"reduce_mean", cpu::reduceMeanKernel, cpu::reduceMeanWorkspace},
    {"reduce_scatter", cpu::reduceScatterKernel, cpu::reduceScatterWorkspace},
    {"reduce_sum", cpu::reduceSumKernel, cpu::reduceSumWorkspace},
    {"relu", cpu::reluKernel},
    {"scale_by_clip", cpu::scaleByClipKernel},
    {"scatter_nd", cpu::scatterNdKernel},
    {"sgd_update", cpu::sgdUpdateKernel},
    {"shard_slice", cpu::shardSliceKernel},
    {"sigmoid", cpu::sigmoidKernel},
    {"sin", cpu::sinKernel},
    {"slice", cpu::sliceKernel},
    {"softmax", cpu::softmaxKernel, cpu::softmaxWorkspace},
    {"softmax_cross_entropy_loss", cpu::softmaxCrossEntropyLossKernel,
     cpu::softmaxCrossEntropyLossWorkspace},
    {"softmax_cross_entropy_loss_grad", cpu::softmaxCrossEntropyLossGradKernel,
     cpu::softmaxCrossEntropyLossGradWorkspace},
    {"softmax_grad", cpu::softmaxGradKernel, cpu::softmaxGradWorkspace},
    {"softplus", cpu::softplusKernel},
    {"split", cpu::splitKernel},
    {"sqrt", cpu::sqrtKernel},
    {"sub", cpu::subKernel},
    {"tanh", cpu::tanhKernel},
    {"transpose", cpu::transposeKernel},
    {"trilu", cpu::triluKernel},
    {"where", cpu::whereKernel},
};

// The (input, output) pairs a kernel may update in place (kernelUpdatesInPlace): each
// optimizer update computes element i of every output from element i of its inputs alone,
// reading all of them before writing any.
struct InPlacePair {
  const char *kernel;
  int input, output;
};
constexpr InPlacePair kInPlacePairs[] = {
    {"adamw_update", 0, 0}, // param -> new_param
    {"adamw_update", 2, 1}, // exp_avg -> new_exp_avg
    {"adamw_update", 3, 2}, // exp_avg_sq -> new_exp_avg_sq
    {"sgd_update", 0, 0},   // param -> new_param
    {"sgd_update", 2, 1},   // momentum_buffer -> new_momentum_buffer
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
