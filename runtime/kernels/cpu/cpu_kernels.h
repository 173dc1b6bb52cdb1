// Every CPU kernel, one function per entry of docs/kernels.md. registry.cpp maps kernel names to
// these; the files named below implement them. A kernel that needs data-sized scratch memory
// also has a workspace-size function (WorkspaceFn, `xxxWorkspace`) next to it.
#pragma once

#include "runtime/kernels/kernel.h"

namespace shardc::runtime::cpu {

// unary.cpp
Status negKernel(KernelArgs &args);
Status absKernel(KernelArgs &args);
Status sqrtKernel(KernelArgs &args);
Status reciprocalKernel(KernelArgs &args);
Status expKernel(KernelArgs &args);
Status logKernel(KernelArgs &args);
Status tanhKernel(KernelArgs &args);
Status erfKernel(KernelArgs &args);
Status sinKernel(KernelArgs &args);
Status cosKernel(KernelArgs &args);
Status sigmoidKernel(KernelArgs &args);
Status softplusKernel(KernelArgs &args);
Status reluKernel(KernelArgs &args);
Status geluKernel(KernelArgs &args);
Status notKernel(KernelArgs &args);

// binary.cpp
Status addKernel(KernelArgs &args);
Status subKernel(KernelArgs &args);
Status mulKernel(KernelArgs &args);
Status divKernel(KernelArgs &args);
Status modKernel(KernelArgs &args);
Status powKernel(KernelArgs &args);
Status maxKernel(KernelArgs &args);
Status minKernel(KernelArgs &args);
Status equalKernel(KernelArgs &args);
Status lessKernel(KernelArgs &args);
Status greaterKernel(KernelArgs &args);
Status andKernel(KernelArgs &args);
Status orKernel(KernelArgs &args);

// select_clip_cast.cpp
Status whereKernel(KernelArgs &args);
Status clipKernel(KernelArgs &args);
Status castKernel(KernelArgs &args);

// dropout.cpp
Status dropoutKernel(KernelArgs &args);

// matmul.cpp
Status matmulKernel(KernelArgs &args);
Status matmulWorkspace(const KernelArgs &args, uint64_t *bytes);
Status gemmKernel(KernelArgs &args);
Status gemmWorkspace(const KernelArgs &args, uint64_t *bytes);

// layer_norm.cpp
Status layerNormKernel(KernelArgs &args);
Status layerNormWorkspace(const KernelArgs &args, uint64_t *bytes);

// softmax.cpp
Status softmaxKernel(KernelArgs &args);
Status logSoftmaxKernel(KernelArgs &args);
Status softmaxWorkspace(const KernelArgs &args, uint64_t *bytes);
Status logSoftmaxWorkspace(const KernelArgs &args, uint64_t *bytes);

// attention.cpp, attention_grad.cpp (fused, tiled scaled dot-product attention; no S x Sk buffer)
Status attentionKernel(KernelArgs &args);
Status attentionWorkspace(const KernelArgs &args, uint64_t *bytes);
Status attentionGradKernel(KernelArgs &args);
Status attentionGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// reduce.cpp
Status reduceSumKernel(KernelArgs &args);
Status reduceMeanKernel(KernelArgs &args);
Status reduceMaxKernel(KernelArgs &args);
Status argMaxKernel(KernelArgs &args);
Status reduceSumWorkspace(const KernelArgs &args, uint64_t *bytes);
Status reduceMeanWorkspace(const KernelArgs &args, uint64_t *bytes);
Status reduceMaxWorkspace(const KernelArgs &args, uint64_t *bytes);

// conv.cpp (grouped 1- to 3-D convolution, no bias, and its gradients)
Status convKernel(KernelArgs &args);
Status convGradInputKernel(KernelArgs &args);
Status convGradWeightKernel(KernelArgs &args);
Status convWorkspace(const KernelArgs &args, uint64_t *bytes);
Status convGradInputWorkspace(const KernelArgs &args, uint64_t *bytes);
Status convGradWeightWorkspace(const KernelArgs &args, uint64_t *bytes);

// pool.cpp (1- to 3-D max and average pooling, and their gradients)
Status maxPoolKernel(KernelArgs &args);
Status maxPoolGradKernel(KernelArgs &args);
Status avgPoolKernel(KernelArgs &args);
Status avgPoolGradKernel(KernelArgs &args);

// data_movement.cpp
Status copyKernel(KernelArgs &args);
Status transposeKernel(KernelArgs &args);
Status sliceKernel(KernelArgs &args);
Status padKernel(KernelArgs &args);
Status expandKernel(KernelArgs &args);
Status triluKernel(KernelArgs &args);
Status scatterNdKernel(KernelArgs &args);
Status cumSumKernel(KernelArgs &args);

// concat_split_gather.cpp
Status concatKernel(KernelArgs &args);
Status splitKernel(KernelArgs &args);
Status gatherKernel(KernelArgs &args);
Status gatherWorkspace(const KernelArgs &args, uint64_t *bytes);

// losses.cpp
Status softmaxCrossEntropyLossKernel(KernelArgs &args);
Status nllLossKernel(KernelArgs &args);
Status softmaxCrossEntropyLossWorkspace(const KernelArgs &args, uint64_t *bytes);

// optimizers.cpp (PyTorch-exact optimizer steps for training)
Status adamwUpdateKernel(KernelArgs &args);
Status sgdUpdateKernel(KernelArgs &args);

// grad_clip.cpp
Status globalNormKernel(KernelArgs &args);
Status globalNormWorkspace(const KernelArgs &args, uint64_t *bytes);
Status scaleByClipKernel(KernelArgs &args);

// gradients_layer_norm.cpp (fused backward kernels for training)
Status layerNormGradKernel(KernelArgs &args);
Status layerNormGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// gradients_softmax.cpp
Status softmaxGradKernel(KernelArgs &args);
Status logSoftmaxGradKernel(KernelArgs &args);
Status softmaxGradWorkspace(const KernelArgs &args, uint64_t *bytes);
Status logSoftmaxGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// gradients_gelu.cpp
Status geluGradKernel(KernelArgs &args);

// gradients_losses.cpp
Status softmaxCrossEntropyLossGradKernel(KernelArgs &args);
Status nllLossGradKernel(KernelArgs &args);
Status softmaxCrossEntropyLossGradWorkspace(const KernelArgs &args, uint64_t *bytes);
Status nllLossGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// gradients_scatter.cpp
Status gatherGradKernel(KernelArgs &args);
Status gatherGradWorkspace(const KernelArgs &args, uint64_t *bytes);
Status padForSliceKernel(KernelArgs &args);

// gradients_reduce.cpp
Status reduceMaxGradKernel(KernelArgs &args);
Status reduceMaxGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// collectives.cpp (data parallelism: through KernelArgs::comm)
Status allReduceKernel(KernelArgs &args);
Status allReduceWorkspace(const KernelArgs &args, uint64_t *bytes);
Status reduceScatterKernel(KernelArgs &args);
Status reduceScatterWorkspace(const KernelArgs &args, uint64_t *bytes);
Status allGatherKernel(KernelArgs &args);
Status allGatherWorkspace(const KernelArgs &args, uint64_t *bytes);
Status shardSliceKernel(KernelArgs &args);

} // namespace shardc::runtime::cpu
