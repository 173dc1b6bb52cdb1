// Every CUDA kernel: the same contracts as the CPU kernels of the same names (docs/kernels.md),
// on tensors in device memory, queued on KernelArgs::stream. registry.cpp maps names to these;
// the files named below implement them. Operand and attribute checks are the CPU kernels'
// shared checks (runtime/kernels/cpu/checks.h, broadcast.h), which read only shapes, dtypes and
// attributes, never the data.
#pragma once

#include "runtime/kernels/kernel.h"

#include <string>
#include <vector>

namespace shardc::runtime::cuda {

// The table (registry.cpp).
KernelFn findKernel(const std::string &name);
Status kernelWorkspaceBytes(const std::string &name, const KernelArgs &args, uint64_t *bytes);
std::vector<std::string> kernelNames();

// elementwise.cu: unary and binary arithmetic, comparisons, where, cast.
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
Status whereKernel(KernelArgs &args);
Status castKernel(KernelArgs &args);

// matmul.cu: matmul and gemm on cuBLASLt (f32 compute), with their workspace functions.
Status matmulKernel(KernelArgs &args);
Status matmulWorkspace(const KernelArgs &args, uint64_t *bytes);
Status gemmKernel(KernelArgs &args);
Status gemmWorkspace(const KernelArgs &args, uint64_t *bytes);

// data_movement.cu: copy, transpose, slice, expand, concat, split, trilu, gather, gather_grad.
Status copyKernel(KernelArgs &args);
Status transposeKernel(KernelArgs &args);
Status sliceKernel(KernelArgs &args);
Status expandKernel(KernelArgs &args);
Status concatKernel(KernelArgs &args);
Status splitKernel(KernelArgs &args);
Status triluKernel(KernelArgs &args);
Status gatherKernel(KernelArgs &args);
Status gatherWorkspace(const KernelArgs &args, uint64_t *bytes);
Status gatherGradKernel(KernelArgs &args);
Status gatherGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// collectives_staged.cpp: all_reduce, reduce_scatter, all_gather and shard_slice, through host
// memory and the CPU kernels (the communicators move host buffers).
Status allReduceKernel(KernelArgs &args);
Status reduceScatterKernel(KernelArgs &args);
Status allGatherKernel(KernelArgs &args);
Status shardSliceKernel(KernelArgs &args);

// reduce.cu: reduce_sum, reduce_mean, reduce_max.
Status reduceSumKernel(KernelArgs &args);
Status reduceMeanKernel(KernelArgs &args);
Status reduceMaxKernel(KernelArgs &args);
Status argMaxKernel(KernelArgs &args);

// optimizers.cu: adamw_update, sgd_update (bit-identical to the CPU's).
Status adamwUpdateKernel(KernelArgs &args);
Status sgdUpdateKernel(KernelArgs &args);

// dropout.cu: dropout (bit-identical to the CPU's).
Status dropoutKernel(KernelArgs &args);

// softmax.cu: softmax, log_softmax and their backwards.
Status softmaxKernel(KernelArgs &args);
Status logSoftmaxKernel(KernelArgs &args);
Status softmaxGradKernel(KernelArgs &args);
Status logSoftmaxGradKernel(KernelArgs &args);

// attention.cu: attention and its backward (flash style, no workspace, deterministic).
Status attentionKernel(KernelArgs &args);
Status attentionGradKernel(KernelArgs &args);

// layer_norm.cu: layer_norm and its backward.
Status layerNormKernel(KernelArgs &args);
Status layerNormWorkspace(const KernelArgs &args, uint64_t *bytes);
Status layerNormGradKernel(KernelArgs &args);
Status layerNormGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// losses.cu: softmax_cross_entropy_loss, nll_loss and their backwards.
Status softmaxCrossEntropyLossKernel(KernelArgs &args);
Status softmaxCrossEntropyLossWorkspace(const KernelArgs &args, uint64_t *bytes);
Status softmaxCrossEntropyLossGradKernel(KernelArgs &args);
Status softmaxCrossEntropyLossGradWorkspace(const KernelArgs &args, uint64_t *bytes);
Status nllLossKernel(KernelArgs &args);
Status nllLossGradKernel(KernelArgs &args);
Status nllLossGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// gradients.cu: gelu_grad, clip, reduce_max_grad.
Status geluGradKernel(KernelArgs &args);
Status clipKernel(KernelArgs &args);
Status reduceMaxGradKernel(KernelArgs &args);
Status reduceMaxGradWorkspace(const KernelArgs &args, uint64_t *bytes);

// grad_clip.cu: global_norm, scale_by_clip (bit-identical to the CPU's).
Status globalNormKernel(KernelArgs &args);
Status globalNormWorkspace(const KernelArgs &args, uint64_t *bytes);
Status scaleByClipKernel(KernelArgs &args);

// pad_scan.cu: pad, pad_for_slice, cum_sum, scatter_nd.
Status padKernel(KernelArgs &args);
Status padForSliceKernel(KernelArgs &args);
Status cumSumKernel(KernelArgs &args);
Status scatterNdKernel(KernelArgs &args);
Status scatterNdWorkspace(const KernelArgs &args, uint64_t *bytes);

} // namespace shardc::runtime::cuda
