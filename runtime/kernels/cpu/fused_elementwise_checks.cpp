#include "runtime/kernels/cpu/fused_elementwise_checks.h"

#include "runtime/kernels/cpu/checks.h"

#include <algorithm>
#include <string>
#include <utility>

namespace shardc::runtime::cpu {

namespace {

constexpr const char *kKernel = "fused_elementwise";

Status fail(const std::string &what) { return Status::error(std::string(kKernel) + ": " + what); }

bool isFusedDtype(DType dtype) {
  return dtype == program::F32 || dtype == program::BF16 || dtype == program::F16;
}

Status checkDtype(const char *kind, size_t index, const Tensor &t) {
  if (isFusedDtype(t.dtype))
    return Status::ok();
  return fail(std::string(kind) + " " + std::to_string(index) + " has dtype " +
              dtypeName(t.dtype) + ", expected f32, bf16 or f16");
}

bool broadcastsTo(const std::vector<int64_t> &in, const std::vector<int64_t> &out) {
  if (in.size() > out.size())
    return false;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != out[lead + d] && in[d] != 1)
      return false;
  return true;
}

// "slot 3" and what it is, for messages.
std::string slotRange(int64_t slots) {
  return slots == 1 ? "slot 0" : "slots 0 to " + std::to_string(slots - 1);
}

} // namespace

Status checkFusedElementwise(const KernelArgs &args, FusedProgram *program) {
  SHARDC_RETURN_IF_ERROR(checkOperands(kKernel, args, Arity::atLeast(1), Arity::atLeast(1)));
  for (size_t i = 0; i < args.inputs.size(); ++i)
    SHARDC_RETURN_IF_ERROR(checkDtype("input", i, args.inputs[i]));
  for (size_t j = 0; j < args.outputs.size(); ++j)
    SHARDC_RETURN_IF_ERROR(checkDtype("output", j, args.outputs[j]));
  const std::vector<int64_t> &shape = args.outputs[0].shape;
  for (size_t j = 1; j < args.outputs.size(); ++j)
    if (args.outputs[j].shape != shape)
      return fail("output " + std::to_string(j) + " has shape " +
                  shapeString(args.outputs[j].shape) + ", but output 0 has " + shapeString(shape) +
                  " (every output has the iteration shape)");
  for (size_t i = 0; i < args.inputs.size(); ++i)
    if (!broadcastsTo(args.inputs[i].shape, shape))
      return fail("input " + std::to_string(i) + " of shape " +
                  shapeString(args.inputs[i].shape) + " does not broadcast to the output shape " +
                  shapeString(shape));

  std::string names;
  std::vector<int64_t> slots, results;
  {
    Status s = getStringAttr(args, "steps", &names);
    if (s)
      s = getIntsAttr(args, "args", &slots);
    if (s)
      s = getIntsAttr(args, "results", &results);
    if (!s)
      return fail(s.message()); // "missing attribute 'steps'", named after the kernel
  }
  // The steps by name, one space between two.
  std::vector<std::string> stepNames;
  for (size_t start = 0; start <= names.size();) {
    const size_t end = std::min(names.find(' ', start), names.size());
    stepNames.push_back(names.substr(start, end - start));
    start = end + 1;
  }
  const size_t numSteps = stepNames.size();
  if (numSteps > static_cast<size_t>(kMaxFusedInstructions))
    return fail("attribute 'steps' has " + std::to_string(numSteps) + " steps, at most " +
                std::to_string(kMaxFusedInstructions));
  if (slots.size() != 2 * numSteps)
    return fail("attribute 'args' has " + std::to_string(slots.size()) + " slots for " +
                std::to_string(numSteps) + " steps, not 2 per step");
  const int64_t numInputs = static_cast<int64_t>(args.inputs.size());
  FusedProgram decoded;
  decoded.numInputs = numInputs;
  for (size_t i = 0; i < numSteps; ++i) {
    const int64_t a = slots[2 * i], b = slots[2 * i + 1];
    const std::string step = "step " + std::to_string(i);
    FusedOp op;
    if (!fusedOpFromName(stepNames[i], &op))
      return fail(step + " is '" + stepNames[i] + "', not a step (docs/kernels.md)");
    const std::string named = step + " (" + fusedOpName(op) + ")";
    const int64_t slot = numInputs + static_cast<int64_t>(i); // the step's own result
    const bool binary = fusedOpArity(op) == 2;
    for (int k = 0; k < (binary ? 2 : 1); ++k) {
      const int64_t operand = k == 0 ? a : b;
      if (operand < 0 || operand >= slot)
        return fail(named + " reads slot " + std::to_string(operand) +
                    ", not an input or an earlier step (" + slotRange(slot) + ")");
    }
    if (!binary && b != -1)
      return fail(named + " takes one operand, so its b must be -1, got " + std::to_string(b));
    decoded.steps.push_back({op, a, binary ? b : -1});
  }
  const int64_t numSlots = numInputs + static_cast<int64_t>(numSteps);
  if (results.size() != args.outputs.size())
    return fail("attribute 'results' has " + std::to_string(results.size()) + " slots for " +
                std::to_string(args.outputs.size()) + " outputs");
  for (size_t j = 0; j < results.size(); ++j)
    if (results[j] < 0 || results[j] >= numSlots)
      return fail("output " + std::to_string(j) + " stores slot " + std::to_string(results[j]) +
                  ", which does not exist (" + slotRange(numSlots) + ")");
  decoded.results = std::move(results);
  *program = std::move(decoded);
  return Status::ok();
}

FusedWalk planFusedWalk(const std::vector<const std::vector<int64_t> *> &inputs,
                        const std::vector<int64_t> &outShape) {
  const size_t numInputs = inputs.size(), rank = outShape.size();
  // Each input's stride per output dim: its contiguous stride, 0 where it is broadcast.
  std::vector<std::vector<int64_t>> full(numInputs, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < numInputs; ++k) {
    const std::vector<int64_t> &in = *inputs[k];
    const size_t lead = rank - in.size();
    int64_t stride = 1;
    for (size_t d = in.size(); d-- > 0;) {
      full[k][lead + d] = in[d] == 1 ? 0 : stride;
      stride *= in[d];
    }
  }
  FusedWalk walk;
  walk.strides.assign(numInputs, {});
  for (size_t d = 0; d < rank; ++d) {
    if (outShape[d] == 1)
      continue; // contributes nothing to the walk
    if (outShape[d] == 0) {
      // An empty walk: one empty dim.
      walk.dims.assign(1, 0);
      for (auto &s : walk.strides)
        s.assign(1, 0);
      return walk;
    }
    bool mergeable = !walk.dims.empty();
    for (size_t k = 0; k < numInputs && mergeable; ++k)
      mergeable = walk.strides[k].back() == full[k][d] * outShape[d];
    if (mergeable) {
      walk.dims.back() *= outShape[d];
      for (size_t k = 0; k < numInputs; ++k)
        walk.strides[k].back() = full[k][d];
    } else {
      walk.dims.push_back(outShape[d]);
      for (size_t k = 0; k < numInputs; ++k)
        walk.strides[k].push_back(full[k][d]);
    }
  }
  if (walk.dims.empty()) {
    walk.dims.push_back(1);
    for (auto &s : walk.strides)
      s.push_back(0);
  }
  return walk;
}

} // namespace shardc::runtime::cpu
