//===- FusedElementwiseOp.cpp - graph.fused_elementwise: verifier, kernel call, cost -----===//
//
// The op's steps are spelled by the names of the ops they replace (FusedSteps.h), and so is
// its kernel call: the kernel reads the same names.
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/FusedSteps.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/KernelCallBuilder.h"

#include <iterator>
#include <string>

using namespace mlir;

namespace shardc::graph {

namespace {

constexpr llvm::StringRef kStepNames[] = {
    "neg", "abs", "relu", "sqrt", "reciprocal", "exp", "log", "tanh", "erf", "sin", "cos",
    "sigmoid", "softplus", "round_bf16", "round_f16", "add", "sub", "mul", "div", "pow", "max",
    "min"};
constexpr size_t kFirstBinary = 15; // "add"

// The result shape every output has; failure (with the error emitted) otherwise.
LogicalResult iterationShape(FusedElementwiseOp op, ArrayRef<int64_t> &shape) {
  if (op.getOutputs().empty())
    return op.emitOpError("has no outputs");
  shape = cast<RankedTensorType>(op.getOutputs().front().getType()).getShape();
  for (Value out : op.getOutputs())
    if (cast<RankedTensorType>(out.getType()).getShape() != shape)
      return op.emitOpError("outputs must all have one shape");
  return success();
}

} // namespace

llvm::ArrayRef<llvm::StringRef> fusedStepNames() { return kStepNames; }

int fusedStepArity(llvm::StringRef name) {
  for (size_t i = 0; i < std::size(kStepNames); ++i)
    if (kStepNames[i] == name)
      return i < kFirstBinary ? 1 : 2;
  return 0;
}

LogicalResult FusedElementwiseOp::verify() {
  ArrayRef<int64_t> shape;
  if (failed(iterationShape(*this, shape)))
    return failure();
  for (Value in : getInputs()) {
    ArrayRef<int64_t> s = cast<RankedTensorType>(in.getType()).getShape();
    if (s.size() > shape.size())
      return emitOpError("an input has more dimensions than the outputs");
    for (size_t i = 0; i < s.size(); ++i) {
      const int64_t d = s[s.size() - 1 - i], o = shape[shape.size() - 1 - i];
      if (d != o && d != 1)
        return emitOpError("an input does not broadcast to the outputs' shape");
    }
  }
  const auto ops = getOps();
  const auto args = getArgs();
  if (ops.empty())
    return emitOpError("has no steps");
  if (ops.size() > static_cast<size_t>(kMaxFusedSteps))
    return emitOpError("has more than ") << kMaxFusedSteps << " steps";
  if (args.size() != 2 * ops.size())
    return emitOpError("needs two args per step");
  const int64_t inputs = static_cast<int64_t>(getInputs().size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const StringRef name = cast<StringAttr>(ops[i]).getValue();
    const int arity = fusedStepArity(name);
    if (arity == 0)
      return emitOpError("step ") << i << ": unknown op '" << name << "'";
    const int64_t slot = inputs + static_cast<int64_t>(i);
    for (int j = 0; j < 2; ++j) {
      const int64_t a = args[2 * i + j];
      const bool used = j < arity;
      if (used && (a < 0 || a >= slot))
        return emitOpError("step ") << i << " reads slot " << a << ", not an earlier one";
      if (!used && a != -1)
        return emitOpError("step ") << i << ": unused args must be -1";
    }
  }
  if (getResults().size() != getOutputs().size())
    return emitOpError("needs one result slot per output");
  for (int64_t r : getResults())
    if (r < 0 || r >= inputs + static_cast<int64_t>(ops.size()))
      return emitOpError("result slot ") << r << " does not exist";
  return success();
}

LogicalResult FusedElementwiseOp::buildKernelCall(KernelCallBuilder &call) {
  std::string steps;
  for (Attribute name : getOps())
    steps += (steps.empty() ? "" : " ") + cast<StringAttr>(name).getValue().str();
  call.setString("steps", steps);
  call.setInts("args", getArgs());
  call.setInts("results", getResults());
  return success();
}

// Made from one device's program, after partitioning: no rule (what the partitioner would do
// with one is replicate it, which is correct).
std::optional<OpShardingRule> FusedElementwiseOp::getShardingRule() {
  return std::nullopt;
}

uint64_t FusedElementwiseOp::getFlops() {
  // One per arithmetic step and element, as the ops it replaces counted (a cast counts none).
  uint64_t steps = 0;
  for (Attribute name : getOps()) {
    const StringRef n = cast<StringAttr>(name).getValue();
    steps += n != "round_bf16" && n != "round_f16";
  }
  return steps *
         static_cast<uint64_t>(cast<RankedTensorType>(getOutputs().front().getType())
                                   .getNumElements());
}

} // namespace shardc::graph
