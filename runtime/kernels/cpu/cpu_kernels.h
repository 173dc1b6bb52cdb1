// Every CPU kernel, one function per entry of docs/kernels.md, declared from the kernel list
// (runtime/kernels/kernels.def): `xxxKernel`, and for a kernel that needs data-sized scratch
// memory its workspace-size function (WorkspaceFn) `xxxWorkspace`. registry.cpp maps kernel
// names to these; each is implemented in the file of its family (unary.cpp, matmul.cpp,
// gradients_*.cpp, collectives.cpp, ...).
#pragma once

#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_def_columns.h"

namespace shardc::runtime::cpu {

#define SHARDC_KERNEL(name, function, cpuWorkspace, cuda, cudaWorkspace, traits)                 \
  Status function(KernelArgs &args);                                                             \
  SHARDC_KERNEL_DECLARE_WORKSPACE_##cpuWorkspace
#include "runtime/kernels/kernels.def"

} // namespace shardc::runtime::cpu
