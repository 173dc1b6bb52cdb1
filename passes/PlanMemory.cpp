//===- PlanMemory.cpp - liveness-based static arena offsets -----------------------------===//
#include "passes/Passes.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"
#include "shardc/Lowering/KernelMapping.h"
#include "shardc/Lowering/KernelWorkspace.h"
#include "shardc/Lowering/MemoryPlanner.h"
#include "shardc/Lowering/Signature.h"
#include "shardc/Lowering/TensorBytes.h"

#include "runtime/kernels/kernel.h"

#include "mlir/IR/Builders.h"

namespace shardc {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"

namespace {

// The graph results to write over their graph input's bytes (result index -> argument): state
// the step carries to the next one under its input's name (trained parameters, optimizer
// state), returned by an op that runs after the loss is final, once no op reads the input
// any more, or as that op's last read where its kernel updates that operand in place
// (runtime::kernelUpdatesInPlace). A step whose loss is not finite can then be stopped before
// its first such op with the state unchanged. Everything else is copied out as before.
llvm::DenseMap<unsigned, mlir::BlockArgument> findInPlaceUpdates(mlir::func::FuncOp func) {
  llvm::DenseMap<unsigned, mlir::BlockArgument> updates;
  mlir::Block &body = func.getBody().front();
  mlir::Operation *terminator = body.getTerminator();
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  int64_t next = 0;
  for (mlir::Operation &op : body.without_terminator())
    position[&op] = next++;

  std::optional<int64_t> lossPosition;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (resultName(func, i) == kLossName) {
      mlir::Operation *def = terminator->getOperand(i).getDefiningOp();
      lossPosition = def ? position.lookup(def) : -1;
    }
  if (!lossPosition)
    return updates; // not a training step

  llvm::StringMap<mlir::BlockArgument> inputs;
  for (mlir::BlockArgument arg : body.getArguments())
    if (std::optional<std::string> name = runtimeInputName(func, arg.getArgNumber()))
      inputs[*name] = arg;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    mlir::Value result = terminator->getOperand(i);
    auto input = inputs.find(resultName(func, i));
    mlir::Operation *producer = result.getDefiningOp();
    if (input == inputs.end() || !producer || llvm::isa<graph::ConstantOp>(producer) ||
        position.lookup(producer) <= *lossPosition || result.getType() != input->second.getType())
      continue;
    mlir::BlockArgument arg = input->second;
    // Returned once, and the input not returned at all: one value per bytes.
    if (llvm::count(terminator->getOperands(), result) != 1 ||
        llvm::is_contained(terminator->getOperands(), arg))
      continue;
    const int64_t at = position.lookup(producer);
    bool safe = true;
    for (mlir::Operation *user : arg.getUsers())
      if (user != producer && (user == terminator || position.lookup(user) > at))
        safe = false;
    if (safe && llvm::is_contained(producer->getOperands(), arg)) {
      mlir::FailureOr<KernelCall> call = mapToKernel(producer);
      if (mlir::failed(call))
        continue;
      auto outputIndex = llvm::find(call->outputs, result) - call->outputs.begin();
      for (auto [k, operand] : llvm::enumerate(call->inputs))
        if (operand == arg && !runtime::kernelUpdatesInPlace(call->kernel, static_cast<int>(k),
                                                             static_cast<int>(outputIndex)))
          safe = false;
    }
    if (safe)
      updates[i] = arg;
  }
  return updates;
}

struct PlanMemoryPass : impl::PlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    mlir::Block &body = func.getBody().front();

    mlir::Operation *terminator = body.getTerminator();
    const llvm::DenseMap<unsigned, mlir::BlockArgument> inPlace = findInPlaceUpdates(func);
    llvm::DenseMap<mlir::Value, mlir::Value> sameBytesAs; // an in-place result -> its input
    for (auto [result, arg] : inPlace)
      sameBytesAs[terminator->getOperand(result)] = arg;

    // Arena values in program order: graph inputs, then every op result (but for in-place
    // results, which take their input's bytes).
    llvm::SmallVector<mlir::Value> values;
    llvm::DenseMap<mlir::Value, size_t> index;
    std::vector<BufferLifetime> lifetimes;
    auto addValue = [&](mlir::Value v, int64_t first) -> bool {
      if (auto input = sameBytesAs.find(v); input != sameBytesAs.end()) {
        index[v] = index.lookup(input->second);
        return true;
      }
      auto type = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
      if (!type || !type.hasStaticShape()) {
        mlir::emitError(v.getLoc(), "tensor of type ")
            << v.getType() << " has no static shape; memory cannot be planned";
        return false;
      }
      index[v] = values.size();
      values.push_back(v);
      uint64_t bytes = type.getNumElements() * runtimeElementSize(type.getElementType());
      lifetimes.push_back({bytes, first, first});
      return true;
    };

    // Everything the runtime feeds by name is copied into the arena before the first op.
    for (mlir::BlockArgument arg : body.getArguments())
      if (runtimeInputName(func, arg.getArgNumber()))
        if (!addValue(arg, -1))
          return signalPassFailure();

    int64_t position = 0;
    for (mlir::Operation &op : body.without_terminator()) {
      if (!llvm::isa<graph::ConstantOp>(op))
        for (mlir::Value r : op.getResults())
          if (!addValue(r, position))
            return signalPassFailure();
      for (mlir::Value operand : op.getOperands())
        if (auto it = index.find(operand); it != index.end())
          lifetimes[it->second].last = std::max(lifetimes[it->second].last, position);
      ++position;
    }
    // Graph outputs must survive until the runtime copies them out after the last op; state
    // updated in place holds its bytes from before the first op to after the last (and on, into
    // the next step).
    for (mlir::Value v : terminator->getOperands())
      if (auto it = index.find(v); it != index.end())
        lifetimes[it->second].last = position;

    MemoryPlan plan = planMemory(lifetimes);

    mlir::Builder builder(func.getContext());
    for (mlir::BlockArgument arg : body.getArguments())
      if (auto it = index.find(arg); it != index.end())
        func.setArgAttr(arg.getArgNumber(), kArgOffsetAttr,
                        builder.getI64IntegerAttr(plan.offsets[it->second]));
    for (mlir::Operation &op : body.without_terminator()) {
      if (llvm::isa<graph::ConstantOp>(op))
        continue;
      llvm::SmallVector<int64_t> offsets;
      for (mlir::Value r : op.getResults())
        offsets.push_back(static_cast<int64_t>(plan.offsets[index[r]]));
      op.setAttr(kOffsetsAttr, builder.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr(kArenaBytesAttr, builder.getI64IntegerAttr(plan.arenaBytes));
    for (auto [result, arg] : inPlace)
      func.setResultAttr(result, kInPlaceAttr, builder.getUnitAttr());

    // The kernels' data-sized temporaries come from one workspace per rank, allocated once:
    // it must hold the largest need of any op.
    uint64_t workspaceBytes = 0;
    for (mlir::Operation &op : body.without_terminator()) {
      if (llvm::isa<graph::ConstantOp>(op))
        continue;
      mlir::FailureOr<KernelCall> call = mapToKernel(&op);
      if (mlir::failed(call))
        return signalPassFailure();
      uint64_t bytes = 0;
      runtime::Status status = kernelWorkspaceBytes(*call, &bytes);
      if (!status.isOk()) {
        op.emitOpError("cannot size the workspace of kernel '")
            << call->kernel << "': " << status.message();
        return signalPassFailure();
      }
      if (bytes > 0)
        op.setAttr(kWorkspaceAttr, builder.getI64IntegerAttr(static_cast<int64_t>(bytes)));
      workspaceBytes = std::max(workspaceBytes, bytes);
    }
    func->setAttr(kWorkspaceBytesAttr,
                  builder.getI64IntegerAttr(static_cast<int64_t>(workspaceBytes)));
  }
};

} // namespace
} // namespace shardc
