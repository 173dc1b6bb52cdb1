// The workspace one op of a program needs: its kernel's workspace-size function applied to the
// op's operand types (from the program's buffers) and attributes. Validation checks every op's
// need against Program.workspace_bytes with it; plan.txt names the op with the largest need.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <cstdint>

namespace shardc::runtime {

// Op `index` of `program`; its buffer indices must be valid (validation checks them first).
// Fails where the kernel's size function rejects the operands or attributes (the kernel
// would then reject them too when it runs).
Status opWorkspaceBytes(const program::Program &program, int index, uint64_t *bytes);

} // namespace shardc::runtime
