//===- PlanReport.cpp - plan.txt --------------------------------------------------------===//
#include "shardc/Lowering/Bundle.h"

#include "runtime/kernels/kernel.h"
#include "runtime/memory/planned_memory.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

namespace shardc {

namespace {

std::string typeString(const program::Buffer &b) {
  std::string s = runtime::dtypeName(b.dtype());
  s += "[";
  for (int i = 0; i < b.shape_size(); ++i)
    s += (i ? "x" : "") + std::to_string(b.shape(i));
  return s + "]";
}

std::string bytesString(uint64_t n) {
  char buf[64];
  if (n < 10 * 1024)
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", n);
  else if (n < 10ull * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", n / (1024.0 * 1024.0));
  return buf;
}

std::string where(const program::Buffer &b) {
  return std::string(b.region() == program::WEIGHTS ? "W@" : "A@") + std::to_string(b.offset());
}

std::string operand(const program::Program &p, int32_t id) {
  if (id < 0)
    return "-";
  const program::Buffer &b = p.buffers(id);
  std::string s = "%" + std::to_string(id) + " " + typeString(b) + " " + where(b);
  return s;
}

// "12345 bytes (12.1 KiB)": exact, so the breakdown can be added up, and readable.
std::string exactBytes(uint64_t n) {
  std::string s = std::to_string(n) + " bytes";
  if (n >= 10 * 1024)
    s += " (" + bytesString(n) + ")";
  return s;
}

// Where the arena peaks: a schedule point of runtime::PlannedMemory.
std::string schedulePoint(const program::Program &p, int64_t point) {
  if (point < 0)
    return "as the inputs are copied in";
  if (point >= p.ops_size())
    return "as the outputs are copied out";
  const program::Op &op = p.ops(static_cast<int>(point));
  return "during #" + std::to_string(point) + " " + op.kernel() + " '" + op.name() + "'";
}

// The planned peak memory and what it is made of (runtime/memory/planned_memory.h). Every
// line below a total adds up to it.
void formatMemory(const program::Program &p, std::ostringstream &os) {
  runtime::PlannedMemory plan = runtime::planPeakMemory(p, /*findWorkspaceOp=*/true);
  os << "memory: planned peak " << exactBytes(p.planned_peak_bytes())
     << " = arena + weights + workspace + step inputs + step outputs\n";
  os << "  arena: " << exactBytes(plan.arena) << ", at its peak "
     << schedulePoint(p, plan.arenaPeakPoint) << ":\n";
  for (program::BufferRole role :
       {program::ROLE_PARAMETER, program::ROLE_GRADIENT, program::ROLE_OPTIMIZER_STATE,
        program::ROLE_INPUT, program::ROLE_ACTIVATION, program::ROLE_CONSTANT,
        program::BUFFER_ROLE_UNSPECIFIED}) {
    uint64_t bytes = plan.arenaLiveByRole[static_cast<size_t>(role)];
    if (bytes > 0 || role == program::ROLE_ACTIVATION)
      os << "    " << runtime::bufferRoleName(role) << ": " << exactBytes(bytes) << "\n";
  }
  os << "    unused (fragmentation, alignment): " << exactBytes(plan.arenaUnused) << "\n";
  os << "  weights: " << exactBytes(plan.weights) << "\n";
  os << "    parameters: " << exactBytes(plan.weightsParameters) << "\n";
  if (p.state_init_size() > 0)
    os << "    initial values of trained parameters: " << exactBytes(plan.weightsInitialValues)
       << "\n";
  os << "    constants: " << exactBytes(plan.weightsConstants) << "\n";
  os << "    alignment: " << exactBytes(plan.weightsPadding) << "\n";
  os << "  workspace: " << exactBytes(plan.workspace);
  if (plan.workspaceOp >= 0) {
    const program::Op &op = p.ops(static_cast<int>(plan.workspaceOp));
    os << " (largest need: #" << plan.workspaceOp << " " << op.kernel() << " '" << op.name()
       << "', " << p.workspace_bytes() << " bytes)";
  }
  os << "\n";
  os << "  step inputs: " << exactBytes(plan.stepInputs) << " (host tensors, one per input)\n";
  os << "  step outputs: " << exactBytes(plan.stepOutputs) << " (host tensors, one per output)\n";
}

void formatProgram(const program::Program &p, std::ostringstream &os) {
  uint64_t paramCount = 0, paramElems = 0;
  for (const program::Buffer &b : p.buffers()) {
    if (b.role() != program::ROLE_PARAMETER || b.kind() == program::ACTIVATION)
      continue;
    ++paramCount;
    uint64_t n = 1;
    for (int64_t d : b.shape())
      n *= d;
    paramElems += n;
  }
  os << "== rank " << p.rank() << " of " << p.world_size() << "\n";
  formatMemory(p, os);
  os << "parameters: " << paramCount << " tensors, " << paramElems << " elements\n";
  os << "inputs:\n";
  for (const program::Binding &b : p.inputs())
    os << "  " << b.name() << ": " << operand(p, b.buffer()) << "\n";
  if (p.state_init_size() > 0) {
    uint64_t bytes = 0;
    for (const program::StateInit &s : p.state_init())
      bytes += s.size_bytes();
    os << "training state: " << p.state_init_size() << " trained parameters fed back each "
       << "step (initial values " << bytesString(bytes) << " in the weights)\n";
  }
  os << "outputs:\n";
  for (const program::Binding &b : p.outputs())
    os << "  " << b.name() << ": " << operand(p, b.buffer()) << "\n";

  std::map<std::string, int> histogram;
  for (const program::Op &op : p.ops())
    ++histogram[op.kernel()];
  os << "kernels: " << p.ops_size() << " calls:";
  for (auto &[kernel, count] : histogram)
    os << " " << kernel << "(" << count << ")";
  os << "\n\nprogram (A@ = arena offset, W@ = weights offset, in bytes):\n";
  for (int i = 0; i < p.ops_size(); ++i) {
    const program::Op &op = p.ops(i);
    os << "  #" << i << " " << op.kernel() << " '" << op.name() << "'\n      in: ";
    for (int j = 0; j < op.inputs_size(); ++j)
      os << (j ? ", " : "") << operand(p, op.inputs(j));
    os << "\n      out: ";
    for (int j = 0; j < op.outputs_size(); ++j)
      os << (j ? ", " : "") << operand(p, op.outputs(j));
    os << "\n";
  }
}

} // namespace

std::string formatPlan(const program::Bundle &bundle) {
  std::ostringstream os;
  os << "shardc plan for " << bundle.source_model() << "\n";
  os << "mode: " << bundle.mode() << ", world size: " << bundle.world_size()
     << ", strategy: single rank (no sharding)\n";
  if (bundle.weights_file().empty())
    os << "weights: absent (planning only; this bundle cannot be run)\n";
  os << "\n";
  for (const program::Program &p : bundle.programs())
    formatProgram(p, os);
  return os.str();
}

} // namespace shardc
