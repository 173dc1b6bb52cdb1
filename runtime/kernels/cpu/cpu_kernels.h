// Every CPU kernel, one function per entry of docs/kernels.md. registry.cpp maps kernel names to
// these; the files named below implement them.
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
Status sigmoidKernel(KernelArgs &args);
Status reluKernel(KernelArgs &args);
Status geluKernel(KernelArgs &args);
Status notKernel(KernelArgs &args);

// binary.cpp
Status addKernel(KernelArgs &args);
Status subKernel(KernelArgs &args);
Status mulKernel(KernelArgs &args);
Status divKernel(KernelArgs &args);
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
Status gemmKernel(KernelArgs &args);

// layer_norm.cpp
Status layerNormKernel(KernelArgs &args);

// softmax.cpp
Status softmaxKernel(KernelArgs &args);
Status logSoftmaxKernel(KernelArgs &args);

// reduce.cpp
Status reduceSumKernel(KernelArgs &args);
Status reduceMeanKernel(KernelArgs &args);
Status reduceMaxKernel(KernelArgs &args);

// data_movement.cpp
Status copyKernel(KernelArgs &args);
Status transposeKernel(KernelArgs &args);
Status sliceKernel(KernelArgs &args);
Status expandKernel(KernelArgs &args);
Status triluKernel(KernelArgs &args);

// concat_split_gather.cpp
Status concatKernel(KernelArgs &args);
Status splitKernel(KernelArgs &args);
Status gatherKernel(KernelArgs &args);

// losses.cpp
Status softmaxCrossEntropyLossKernel(KernelArgs &args);
Status nllLossKernel(KernelArgs &args);

// optimizers.cpp (PyTorch-exact optimizer steps for training)
Status adamwUpdateKernel(KernelArgs &args);
Status sgdUpdateKernel(KernelArgs &args);

// grad_clip.cpp
Status globalNormKernel(KernelArgs &args);
Status scaleByClipKernel(KernelArgs &args);

// gradients_layer_norm.cpp (fused backward kernels for training)
Status layerNormGradKernel(KernelArgs &args);

// gradients_softmax.cpp
Status softmaxGradKernel(KernelArgs &args);
Status logSoftmaxGradKernel(KernelArgs &args);

// gradients_gelu.cpp
Status geluGradKernel(KernelArgs &args);

// gradients_losses.cpp
Status softmaxCrossEntropyLossGradKernel(KernelArgs &args);
Status nllLossGradKernel(KernelArgs &args);

// gradients_scatter.cpp
Status gatherGradKernel(KernelArgs &args);
Status padForSliceKernel(KernelArgs &args);

// gradients_reduce.cpp
Status reduceMaxGradKernel(KernelArgs &args);

} // namespace shardc::runtime::cpu
