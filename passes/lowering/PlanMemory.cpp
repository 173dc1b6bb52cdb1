//===- PlanMemory.cpp - liveness-based static arena offsets -----------------------------===//
#include "passes/lowering/LoweringPasses.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphAttrNames.h"
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
#include "passes/lowering/LoweringPasses.h.inc"

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

// The first op after `op` that reads one of its results, null when only the graph's outputs
// do (ops are compared by `position`).
mlir::Operation *firstReader(mlir::Operation *op,
                             const llvm::DenseMap<mlir::Operation *, int64_t> &position) {
  mlir::Operation *first = nullptr;
  for (mlir::Value result : op->getResults())
    for (mlir::Operation *user : result.getUsers())
      if (auto it = position.find(user);
          it != position.end() && (!first || it->second < position.lookup(first)))
        first = user;
  return first;
}

struct PlanMemoryPass : impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

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

    // Every op's position, and the program index of each op the program runs (constants go to
    // the weights): the emitter numbers the program's ops so.
    llvm::DenseMap<mlir::Operation *, int64_t> positions, programIndex;
    int64_t end = 0, programOps = 0;
    for (mlir::Operation &op : body.without_terminator()) {
      positions[&op] = end++;
      if (!llvm::isa<graph::ConstantOp>(op))
        programIndex[&op] = programOps++;
    }
    mlir::Builder builder(func.getContext());

    int64_t position = 0;
    for (mlir::Operation &op : body.without_terminator()) {
      if (!llvm::isa<graph::ConstantOp>(op))
        for (mlir::Value r : op.getResults())
          if (!addValue(r, position))
            return signalPassFailure();
      // An asynchronous collective reads its operands until it completes, just before its
      // first reader: nothing may take their bytes before then.
      int64_t readsUntil = position;
      op.removeAttr(kAsyncAttr);
      if (overlapCollectives && !llvm::isa<graph::ConstantOp>(op)) {
        mlir::FailureOr<KernelCall> call = mapToKernel(&op);
        if (mlir::failed(call))
          return signalPassFailure();
        mlir::Operation *readerOp = firstReader(&op, positions);
        const int64_t reader = readerOp ? positions.lookup(readerOp) : end;
        // Whether the program runs an op between the two (constants are no ops there).
        const int64_t programReader = readerOp ? programIndex.lookup(readerOp) : programOps;
        const bool opsBetween = programReader > programIndex.lookup(&op) + 1;
        // State updated in place is overwritten by its last reader: a collective still
        // reading it then would race with that write (rare: collectives read state early).
        bool readsOverwrittenState = false;
        for (mlir::Value operand : op.getOperands())
          for (auto [result, arg] : inPlace)
            if (operand == arg) {
              mlir::Operation *writer = terminator->getOperand(result).getDefiningOp();
              readsOverwrittenState |= writer && positions.lookup(writer) < reader;
            }
        if (runtime::kernelMovesDataBetweenRanks(call->kernel) && opsBetween &&
            !readsOverwrittenState) {
          op.setAttr(kAsyncAttr, builder.getUnitAttr());
          readsUntil = reader - 1;
        }
      }
      for (mlir::Value operand : op.getOperands())
        if (auto it = index.find(operand); it != index.end())
          lifetimes[it->second].last = std::max(lifetimes[it->second].last, readsUntil);
      // It writes its results until it completes too, the ones nothing reads included (a
      // pipeline transfer receives a value its stage already has).
      if (!llvm::isa<graph::ConstantOp>(op))
        for (mlir::Value r : op.getResults())
          if (auto it = index.find(r); it != index.end())
            lifetimes[it->second].last = std::max(lifetimes[it->second].last, readsUntil);
      ++position;
    }
    // Graph outputs must survive until the runtime copies them out after the last op; state
    // updated in place holds its bytes from before the first op to after the last (and on, into
    // the next step).
    for (mlir::Value v : terminator->getOperands())
      if (auto it = index.find(v); it != index.end())
        lifetimes[it->second].last = position;

    MemoryPlan plan = planMemory(lifetimes);

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
    // it must hold the largest need of any op. The asynchronous collectives run while other
    // kernels use it, so theirs come from a second one.
    uint64_t workspaceBytes = 0, commWorkspaceBytes = 0;
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
      uint64_t &need = op.hasAttr(kAsyncAttr) ? commWorkspaceBytes : workspaceBytes;
      need = std::max(need, bytes);
    }
    func->setAttr(kWorkspaceBytesAttr,
                  builder.getI64IntegerAttr(static_cast<int64_t>(workspaceBytes)));
    func->setAttr(kCommWorkspaceBytesAttr,
                  builder.getI64IntegerAttr(static_cast<int64_t>(commWorkspaceBytes)));
  }
};

} // namespace
} // namespace shardc
