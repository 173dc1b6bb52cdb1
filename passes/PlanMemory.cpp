//===- PlanMemory.cpp - liveness-based static arena offsets -----------------------------===//
#include "passes/Passes.h"

#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Dialect/Graph/GraphOps.h"
#include "shardc/Dialect/Graph/ShapeRules.h"
#include "shardc/Lowering/KernelMapping.h"
#include "shardc/Lowering/KernelWorkspace.h"
#include "shardc/Lowering/MemoryPlanner.h"
#include "shardc/Lowering/Signature.h"
#include "shardc/Lowering/TensorBytes.h"

#include "mlir/IR/Builders.h"

namespace shardc {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"

namespace {

struct PlanMemoryPass : impl::PlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    mlir::Block &body = func.getBody().front();

    // Arena values in program order: graph inputs, then every op result.
    llvm::SmallVector<mlir::Value> values;
    llvm::DenseMap<mlir::Value, size_t> index;
    std::vector<BufferLifetime> lifetimes;
    auto addValue = [&](mlir::Value v, int64_t first) -> bool {
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
    // Graph outputs must survive until the runtime copies them out after the last op.
    for (mlir::Value v : body.getTerminator()->getOperands())
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
