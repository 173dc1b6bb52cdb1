// Structural checks of one rank's Program: everything the executor indexes or dereferences is
// verified here once, so that running a corrupt or hand-edited program is an error message,
// never an out-of-bounds access.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

namespace shardc::runtime {

// Checks the mesh (axis names and sizes, world_size, this rank's coordinate), the groups (each
// the slice of the mesh through this rank along its axes, with exactly that slice's ranks in
// order; unique names and axes), buffers (dtype, shape, size, alignment, region bounds), ops
// (known kernel, operand indices, outputs in the writable arena and not overlapping their own
// operands, workspace need within workspace_bytes; a collective's "group" an existing group of
// num_ranks ranks, its "dtype" a known dtype) and bindings (indices, unique names, inputs in
// the arena). Messages name the offending item, e.g. "op 12 ('MatMul_3'): unknown kernel
// 'foo'"; the caller prepends the file.
Status validateProgram(const program::Program &program);

} // namespace shardc::runtime
