// The planned peak memory of one rank's program: everything the runtime holds while it runs
// the program, derived from the program alone, allocation by allocation (docs/plan-format.md,
// "Peak memory"):
//
//   arena        one allocation of arena_bytes
//   weights      one allocation of weights_bytes (the WEIGHTS region at the start of the
//                bundle's weights file; the initial values after it are read into the step
//                inputs, not held)
//   workspace    one allocation of workspace_bytes (the kernels' scratch), and one of
//                comm_workspace_bytes when it is not 0 (the asynchronous collectives')
//   step inputs  a host tensor per graph input (size_bytes each): what shardrun reads, or the
//                training loop carries and feeds, every run of the program; none for state
//                updated in place (Binding.in_place), which lives in the arena from step to step
//   step outputs a host tensor per graph output, which each run's outputs are copied into
//                (again none for state updated in place)
//
// Each region is an AlignedBuffer, counted as AlignedBuffer::allocationSize (rounded up to 64
// bytes, at least 64). All of them are held at once after the first run, so the peak is their sum.
// The compiler stores the total in Program.planned_peak_bytes and prints the breakdown in
// plan.txt; shardrun compares it with what its MemoryTracker measured.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <array>
#include <map>
#include <cstdint>

namespace shardc::runtime {

inline constexpr int kBufferRoleCount = program::BufferRole_ARRAYSIZE;
// "parameters", "gradients", "optimizer state", "inputs", "activations", "constants"
// ("unclassified" for BUFFER_ROLE_UNSPECIFIED).
const char *bufferRoleName(program::BufferRole role);

struct PlannedMemory {
  // The arena allocation, and how it is used at the schedule point where the bytes of live
  // arena buffers peak: a point is -1 (graph inputs copied in), an op index (the op runs: its
  // operands and results and everything read later are live), or ops_size() (graph outputs
  // copied out). The earliest point wins a tie.
  uint64_t arena = 0;
  int64_t arenaPeakPoint = -1;
  std::array<uint64_t, kBufferRoleCount> arenaLiveByRole{}; // indexed by BufferRole
  // The same bytes by role and element type (each role's map adds up to its arenaLiveByRole).
  std::array<std::map<program::DType, uint64_t>, kBufferRoleCount> arenaLiveByRoleAndDtype{};
  uint64_t arenaLive = 0;                                   // the sum of arenaLiveByRole
  uint64_t arenaUnused = 0; // arena - arenaLive: fragmentation and alignment padding

  // The weights allocation: frozen parameters, constants, and the alignment padding between
  // them and at the end.
  uint64_t weights = 0;
  uint64_t weightsParameters = 0;
  uint64_t weightsConstants = 0;
  uint64_t weightsPadding = 0;

  uint64_t workspace = 0;
  // The asynchronous collectives' scratch (Program.comm_workspace_bytes; 0 when there is none).
  uint64_t commWorkspace = 0;
  // The op whose kernel needs the largest workspace (-1 when none needs any); only filled in
  // when planPeakMemory is given the workspace-size function to run on every op.
  int64_t workspaceOp = -1;

  uint64_t stepInputs = 0;
  uint64_t stepOutputs = 0;

  uint64_t total = 0; // arena + weights + workspace + stepInputs + stepOutputs
};

// The workspace op `index` of `program` needs (opWorkspaceBytes, runtime/loader/op_workspace.h:
// the kernels' own size functions, which this layer does not see).
using OpWorkspaceBytesFn = Status (*)(const program::Program &program, int index, uint64_t *bytes);

// The program's buffer indices must be valid (run validateProgram first on untrusted programs).
// With `opWorkspaceBytes`, also finds workspaceOp.
PlannedMemory planPeakMemory(const program::Program &program,
                             OpWorkspaceBytesFn opWorkspaceBytes = nullptr);

} // namespace shardc::runtime
