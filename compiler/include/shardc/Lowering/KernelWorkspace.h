//===- KernelWorkspace.h - the scratch memory a kernel call needs -----------------------===//
//
// Runtime kernels take their data-sized temporaries from one per-rank workspace; each kernel
// that needs one has a workspace-size function next to it in the CPU kernel library. The
// memory planner sizes the workspace with it, and constant evaluation allocates what it says.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_KERNELWORKSPACE_H
#define SHARDC_LOWERING_KERNELWORKSPACE_H

#include "shardc/Lowering/KernelMapping.h"

#include "runtime/support/status.h"

#include <cstdint>

namespace shardc {

// Bytes of workspace the kernel of `call` needs, from the operands' static types and the
// attributes. Fails, with the kernel's message, where the kernel would reject them.
runtime::Status kernelWorkspaceBytes(const KernelCall &call, uint64_t *bytes);

} // namespace shardc

#endif
