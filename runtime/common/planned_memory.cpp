#include "runtime/common/planned_memory.h"

#include "runtime/support/aligned_buffer.h"

#include <algorithm>
#include <vector>

namespace shardc::runtime {

namespace {

// Live ranges of the arena buffers over the schedule points -1 .. ops_size(), and the point
// where the sum of their sizes peaks. A buffer lives from the point that writes it (-1 for a
// graph input) to the last point that reads it (ops_size() for a graph output): the same
// lifetimes the compiler's memory planner placed the buffers by.
void planArenaPeak(const program::Program &program, PlannedMemory *plan) {
  const int64_t numOps = program.ops_size();
  const int64_t kNever = numOps + 1;
  std::vector<int64_t> first(program.buffers_size(), kNever), last(program.buffers_size(), -2);
  auto touch = [&](int buffer, int64_t point, bool writes) {
    if (buffer < 0 || program.buffers(buffer).region() != program::ARENA)
      return;
    if (writes)
      first[buffer] = std::min(first[buffer], point);
    last[buffer] = std::max(last[buffer], point);
  };
  for (const program::Binding &binding : program.inputs())
    touch(binding.buffer(), -1, /*writes=*/true);
  for (int64_t i = 0; i < numOps; ++i) {
    // An asynchronous collective reads its operands until just before the op it completes
    // before.
    const program::Op &op = program.ops(static_cast<int>(i));
    const int64_t readsUntil = op.completes_before() > i ? op.completes_before() - 1 : i;
    for (int buffer : op.inputs())
      touch(buffer, readsUntil, /*writes=*/false);
    for (int buffer : program.ops(static_cast<int>(i)).outputs())
      touch(buffer, i, /*writes=*/true);
  }
  // State updated in place holds its bytes through the whole step, and on into the next: its
  // input buffer counts from before the first op to after the last, and the output buffer
  // over the same bytes is not counted again.
  std::vector<bool> sameBytesAsAnInput(program.buffers_size(), false);
  for (const program::Binding &binding : program.outputs()) {
    touch(binding.buffer(), numOps, /*writes=*/false);
    if (binding.in_place())
      sameBytesAsAnInput[binding.buffer()] = true;
  }
  for (const program::Binding &binding : program.inputs())
    if (binding.in_place())
      touch(binding.buffer(), numOps, /*writes=*/false);

  // Bytes live at each point (index = point + 1), from a difference array.
  std::vector<int64_t> delta(static_cast<size_t>(numOps) + 3, 0);
  for (int b = 0; b < program.buffers_size(); ++b) {
    if (first[b] > last[b] || sameBytesAsAnInput[b]) // never written, or counted as the input
      continue;
    const int64_t size = static_cast<int64_t>(program.buffers(b).size_bytes());
    delta[static_cast<size_t>(first[b] + 1)] += size;
    delta[static_cast<size_t>(last[b] + 2)] -= size;
  }
  int64_t live = 0, peak = -1;
  for (int64_t point = -1; point <= numOps; ++point) {
    live += delta[static_cast<size_t>(point + 1)];
    if (live > peak) {
      peak = live;
      plan->arenaPeakPoint = point;
    }
  }
  for (int b = 0; b < program.buffers_size(); ++b)
    if (!sameBytesAsAnInput[b] && first[b] <= plan->arenaPeakPoint &&
        plan->arenaPeakPoint <= last[b]) {
      const program::Buffer &buffer = program.buffers(b);
      // proto3 enums keep unknown values: a role this runtime does not know is unclassified.
      const int role = program::BufferRole_IsValid(buffer.role()) ? buffer.role() : 0;
      plan->arenaLiveByRole[static_cast<size_t>(role)] += buffer.size_bytes();
      plan->arenaLiveByRoleAndDtype[static_cast<size_t>(role)][buffer.dtype()] +=
          buffer.size_bytes();
      plan->arenaLive += buffer.size_bytes();
    }
  plan->arena = AlignedBuffer::allocationSize(program.arena_bytes());
  plan->arenaUnused = plan->arena > plan->arenaLive ? plan->arena - plan->arenaLive : 0;
}

void planWeights(const program::Program &program, PlannedMemory *plan) {
  for (const program::Buffer &buffer : program.buffers()) {
    if (buffer.region() != program::WEIGHTS)
      continue;
    if (buffer.kind() == program::CONSTANT)
      plan->weightsConstants += buffer.size_bytes();
    else
      plan->weightsParameters += buffer.size_bytes();
  }
  plan->weights = AlignedBuffer::allocationSize(program.weights_bytes());
  const uint64_t data = plan->weightsParameters + plan->weightsConstants;
  plan->weightsPadding = plan->weights > data ? plan->weights - data : 0;
}

} // namespace

const char *bufferRoleName(program::BufferRole role) {
  switch (role) {
  case program::ROLE_PARAMETER:
    return "parameters";
  case program::ROLE_GRADIENT:
    return "gradients";
  case program::ROLE_OPTIMIZER_STATE:
    return "optimizer state";
  case program::ROLE_INPUT:
    return "inputs";
  case program::ROLE_ACTIVATION:
    return "activations";
  case program::ROLE_CONSTANT:
    return "constants";
  case program::ROLE_BUFFER:
    return "buffers";
  default:
    return "unclassified";
  }
}

PlannedMemory planPeakMemory(const program::Program &program,
                             OpWorkspaceBytesFn opWorkspaceBytes) {
  PlannedMemory plan;
  planArenaPeak(program, &plan);
  planWeights(program, &plan);
  plan.workspace = AlignedBuffer::allocationSize(program.workspace_bytes());
  plan.commWorkspace = program.comm_workspace_bytes() > 0
                           ? AlignedBuffer::allocationSize(program.comm_workspace_bytes())
                           : 0;
  if (opWorkspaceBytes != nullptr) {
    uint64_t largest = 0;
    for (int i = 0; i < program.ops_size(); ++i) {
      uint64_t bytes = 0;
      if (opWorkspaceBytes(program, i, &bytes).isOk() && bytes > largest) {
        largest = bytes;
        plan.workspaceOp = i;
      }
    }
  }
  // State updated in place stays in the arena: no host tensor carries it between steps.
  for (const program::Binding &binding : program.inputs())
    if (!binding.in_place())
      plan.stepInputs += program.buffers(binding.buffer()).size_bytes();
  for (const program::Binding &binding : program.outputs())
    if (!binding.in_place())
      plan.stepOutputs += program.buffers(binding.buffer()).size_bytes();
  plan.total = plan.arena + plan.weights + plan.workspace + plan.commWorkspace +
               plan.stepInputs + plan.stepOutputs;
  return plan;
}

} // namespace shardc::runtime
