//===- PropagateSharding.cpp - the batch, found through the ops' sharding rules ---------===//
//
// The batch split is a sharding like any other: the class of dimensions (DimensionClasses.h)
// that contains one dimension of every graph input, none of any parameter, and that no op
// needs whole. It is found, not assumed: a model whose dim 0 is its sequence (PyTorch's
// nn.Transformer with batch_first=False) is split along dim 1, and a model that mixes rows
// across the batch (a batch-wide normalisation computed with ops that have no rule for it) is
// refused with the op that does it.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/sharding/DimensionClasses.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>

namespace shardc {
#define GEN_PASS_DEF_PROPAGATESHARDING
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;
using sharding::DimensionClasses;

std::string argName(func::FuncOp func, unsigned i) {
  for (StringRef attr : {graph::kInputAttr, graph::kParamAttr, kStateAttr})
    if (auto n = func.getArgAttrOfType<StringAttr>(i, attr))
      return n.str();
  return "argument " + std::to_string(i);
}

struct PropagateShardingPass : impl::PropagateShardingBase<PropagateShardingPass> {
  using PropagateShardingBase::PropagateShardingBase;

  // Why class `cls` cannot be the batch; empty when it can.
  std::string whyNotBatch(func::FuncOp func, const DimensionClasses &dc, int cls) {
    std::string blocker = dc.describeBlocker(cls);
    if (!blocker.empty())
      return blocker;
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      unsigned inClass = 0;
      for (unsigned d = 0; d < type.getRank(); ++d)
        inClass += dc.classOf(arg, d) == cls;
      bool isInput = func.getArgAttr(arg.getArgNumber(), graph::kInputAttr) != nullptr;
      if (isInput && inClass != 1)
        return "input '" + argName(func, arg.getArgNumber()) + "' has " +
               std::to_string(inClass) + " dimensions in it, not one";
      if (!isInput && inClass)
        return "'" + argName(func, arg.getArgNumber()) +
               "' (a parameter or state, the same on every device) has it";
    }
    if (dc.info(cls).unit < ranks)
      return "its size " + std::to_string(dc.info(cls).unit) + " is smaller than the " +
             std::to_string(ranks) + " data-parallel devices";
    return "";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("train_step");
    if (!func)
      func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func) {
      module.emitError("no @train_step or @forward function to shard");
      return signalPassFailure();
    }
    if (ranks < 1) {
      func.emitError("propagate-sharding needs ranks >= 1, got ") << static_cast<int64_t>(ranks);
      return signalPassFailure();
    }
    SmallVector<BlockArgument> inputs;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), graph::kInputAttr))
        inputs.push_back(arg);
    if (inputs.empty()) {
      func.emitError("the model has no graph inputs whose batch to split across devices");
      return signalPassFailure();
    }

    DimensionClasses dc(func);
    BlockArgument first = inputs.front();
    auto firstType = cast<RankedTensorType>(first.getType());
    int batch = -1;
    std::string rejected;
    for (unsigned d = 0; d < firstType.getRank() && batch < 0; ++d) {
      int cls = dc.classOf(first, d);
      std::string why = cls < 0 ? "it has size 1" : whyNotBatch(func, dc, cls);
      if (why.empty()) {
        batch = cls;
        break;
      }
      rejected += (rejected.empty() ? "" : "; ") + std::string("dim ") + std::to_string(d) +
                  " (size " + std::to_string(firstType.getDimSize(d)) + "): " + why;
    }
    if (batch < 0) {
      func.emitError("cannot split the batch across ")
          << static_cast<int64_t>(ranks) << " data-parallel devices: no dimension of input '"
          << argName(func, first.getArgNumber())
          << "' is one along which rows never interact: " << rejected;
      return signalPassFailure();
    }

    OpBuilder b(&getContext());
    auto meshOp = module.lookupSymbol<mesh::MeshOp>(meshName);
    if (!meshOp) {
      b.setInsertionPointToStart(module.getBody());
      meshOp = b.create<mesh::MeshOp>(module.getLoc(), meshName.getValue(),
                                      ArrayRef<int64_t>{ranks});
      meshOp->setAttr("graph.axis_names", b.getStrArrayAttr({"dp"}));
    }
    auto meshRef = FlatSymbolRefAttr::get(&getContext(), meshOp.getSymName());
    func->setAttr(sharding::kBatchSizeAttr, b.getI64IntegerAttr(dc.info(batch).unit));

    // Every value with a dimension in the batch class is split on mesh axis 0 along it.
    llvm::MapVector<Value, SmallVector<SmallVector<mesh::MeshAxis>>> split;
    for (const sharding::DimRef &ref : dc.info(batch).members) {
      auto [it, inserted] = split.try_emplace(ref.value);
      if (inserted)
        it->second.resize(cast<RankedTensorType>(ref.value.getType()).getRank());
      it->second[ref.dim] = {0};
    }
    for (auto &[value, axes] : split)
      sharding::setSharding(value, sharding::makeSharding(meshRef, axes));
  }
};

} // namespace
} // namespace shardc
