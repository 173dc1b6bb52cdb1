// The expansions of kernels.def's token columns. A row's column such as
// `workspace(matmulWorkspace)` or `none` is pasted onto a prefix below, giving either a
// function-like macro applied to the function's name or a plain macro.
#pragma once

// cpuWorkspace, cudaWorkspace: the WorkspaceFn a table holds.
#define SHARDC_KERNEL_WORKSPACE_workspace(function) function
#define SHARDC_KERNEL_WORKSPACE_none nullptr

// cpuWorkspace, cudaWorkspace: the declaration of the workspace-size function, if any.
#define SHARDC_KERNEL_DECLARE_WORKSPACE_workspace(function)                                     \
  Status function(const KernelArgs &args, uint64_t *bytes);
#define SHARDC_KERNEL_DECLARE_WORKSPACE_none

// cuda: its arguments where the kernel has a CUDA implementation, nothing where it has not.
#define SHARDC_KERNEL_IF_CUDA_cuda(...) __VA_ARGS__
#define SHARDC_KERNEL_IF_CUDA_cpu_only(...)
