//===- StepCost.cpp ---------------------------------------------------------------------===//
#include "shardc/Lowering/StepCost.h"

#include "shardc/Dialect/Graph/GraphAttrNames.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Lowering/KernelMapping.h"
#include "shardc/Lowering/MemoryPlanner.h"
#include "shardc/Lowering/RankPrograms.h"
#include "shardc/Lowering/Signature.h"
#include "shardc/Lowering/TensorBytes.h"

#include "runtime/kernels/kernel_traits.h"
#include "runtime/support/aligned_buffer.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace shardc {

namespace {

uint64_t tensorBytes(Type type) {
  auto ranked = cast<RankedTensorType>(type);
  return static_cast<uint64_t>(ranked.getNumElements()) *
         runtimeElementSize(ranked.getElementType());
}

// Each present value's (elements, bytes per element), as collectiveCallBytesSent takes them.
std::vector<CollectiveOperand> collectiveOperands(ValueRange values) {
  std::vector<CollectiveOperand> operands;
  for (Value v : values)
    if (v) {
      auto ranked = cast<RankedTensorType>(v.getType());
      operands.emplace_back(static_cast<uint64_t>(ranked.getNumElements()),
                            runtimeElementSize(ranked.getElementType()));
    }
  return operands;
}

} // namespace

FailureOr<PlannedStepCost> plannedStepCost(func::FuncOp planned) {
  auto arena = planned->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
  auto workspace = planned->getAttrOfType<IntegerAttr>(kWorkspaceBytesAttr);
  if (!arena || !workspace)
    return planned.emitError("memory is not planned (run --shardc-plan-memory first)");
  using runtime::AlignedBuffer;
  uint64_t stepInputs = 0, stepOutputs = 0;
  // The WEIGHTS region in the emitter's order: frozen parameters (arguments the step does not
  // feed), then the constants, each at the next aligned offset.
  uint64_t weights = 0;
  // State updated in place (kInPlaceAttr on the result) has no host tensor either way.
  Block &body = planned.getBody().front();
  llvm::StringSet<> inPlace;
  for (unsigned i = 0; i < planned.getNumResults(); ++i) {
    if (planned.getResultAttr(i, kInPlaceAttr))
      inPlace.insert(resultName(planned, i));
    else
      stepOutputs += tensorBytes(planned.getFunctionType().getResult(i));
  }
  for (BlockArgument arg : body.getArguments()) {
    if (std::optional<std::string> name = runtimeInputName(planned, arg.getArgNumber()))
      stepInputs += inPlace.contains(*name) ? 0 : tensorBytes(arg.getType());
    else
      weights = alignUp(weights) + tensorBytes(arg.getType());
  }

  PlannedStepCost cost;
  for (Operation &op : body.without_terminator()) {
    if (auto constant = dyn_cast<graph::ConstantOp>(op)) {
      weights = alignUp(weights) + tensorBytes(constant.getType());
      continue;
    }
    // Only the kernels that send data between ranks cost communication; the upstream
    // all-reduce runs as all_reduce.
    auto kernelOp = dyn_cast<graph::KernelOpInterface>(op);
    if (!isa<mesh::AllReduceOp>(op) &&
        !(kernelOp && runtime::kernelHasTrait(kernelOp.getKernelName(),
                                              runtime::kMovesDataBetweenRanks)))
      continue;
    // The call the emitter makes: its kernel and its group's number of ranks.
    FailureOr<KernelCall> call = mapToKernel(&op);
    if (failed(call))
      return failure();
    auto ranks = call->attrs.find("num_ranks");
    if (ranks == call->attrs.end())
      return op.emitOpError("has no group of ranks");
    cost.commBytes += collectiveCallBytesSent(call->kernel, static_cast<int>(ranks->second.i()),
                                              collectiveOperands(call->inputs),
                                              collectiveOperands(call->outputs));
  }
  // The asynchronous collectives' workspace, a second allocation when there is one.
  auto comm = planned->getAttrOfType<IntegerAttr>(kCommWorkspaceBytesAttr);
  const uint64_t commWorkspace = comm && comm.getInt() > 0
                                     ? AlignedBuffer::allocationSize(
                                           static_cast<uint64_t>(comm.getInt()))
                                     : 0;
  cost.peakBytes = AlignedBuffer::allocationSize(static_cast<uint64_t>(arena.getInt())) +
                   AlignedBuffer::allocationSize(weights) +
                   AlignedBuffer::allocationSize(static_cast<uint64_t>(workspace.getInt())) +
                   commWorkspace + stepInputs + stepOutputs;
  return cost;
}

} // namespace shardc
