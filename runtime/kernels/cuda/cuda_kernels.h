// Every CUDA kernel: the same contracts as the CPU kernels of the same names (docs/kernels.md),
// on tensors in device memory, queued on KernelArgs::stream. registry.cpp maps names to these;
// the files named below implement them. Operand and attribute checks are the CPU kernels'
// shared checks (runtime/kernels/cpu/checks.h, broadcast.h), which read only shapes, dtypes and
// attributes, never the data.
#pragma once

#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_def_columns.h"

#include <string>
#include <vector>

namespace shardc::runtime::cuda {

// The table (registry.cpp).
KernelFn findKernel(const std::string &name);
Status kernelWorkspaceBytes(const std::string &name, const KernelArgs &args, uint64_t *bytes);
std::vector<std::string> kernelNames();

// The kernels of kernels.def marked `cuda`, each with its CUDA workspace-size function where
// it has one; implemented in elementwise.cu, matmul.cu (cuBLASLt), data_movement.cu,
// reduce.cu, optimizers.cu, dropout.cu, softmax.cu, attention.cu, layer_norm.cu, losses.cu,
// gradients.cu, grad_clip.cu, pad_scan.cu and collectives_staged.cpp (through host memory and
// the CPU kernels: the communicators move host buffers).
#define SHARDC_KERNEL(name, function, cpuWorkspace, cuda, cudaWorkspace, traits)                 \
  SHARDC_KERNEL_IF_CUDA_##cuda(Status function(KernelArgs &args);                               \
                               SHARDC_KERNEL_DECLARE_WORKSPACE_##cudaWorkspace)
#include "runtime/kernels/kernels.def"

} // namespace shardc::runtime::cuda
