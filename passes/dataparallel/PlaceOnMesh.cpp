//===- PlaceOnMesh.cpp - the data-parallel mesh and each argument's sharding --------------===//
#include "passes/dataparallel/DataParallel.h"
#include "passes/dataparallel/DataParallelPasses.h"

#include "shardc/Autodiff/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

namespace shardc {
#define GEN_PASS_DEF_PLACEONMESH
#include "passes/dataparallel/DataParallelPasses.h.inc"

namespace {

using namespace mlir;

struct PlaceOnMeshPass : impl::PlaceOnMeshBase<PlaceOnMeshPass> {
  using PlaceOnMeshBase::PlaceOnMeshBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step) {
      module.emitError("no @train_step to place on a mesh (run --shardc-build-train-step first)");
      return signalPassFailure();
    }
    if (ranks < 1 || zero < 0 || zero > 3) {
      module.emitError("place-on-mesh needs ranks >= 1 and zero in 0..3, got ranks=")
          << ranks << " zero=" << zero;
      return signalPassFailure();
    }
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    // shardc-propagate-sharding has created the mesh when it split the batch (the 2-D
    // @mesh(dp x tp) with tensor parallelism); its shardings name it.
    mesh::MeshOp meshOp;
    for (BlockArgument arg : step.getArguments())
      if (auto s = step.getArgAttrOfType<mesh::MeshShardingAttr>(arg.getArgNumber(),
                                                                 dp::kShardingAttr))
        meshOp = module.lookupSymbol<mesh::MeshOp>(s.getMesh().getAttr());
    if (!meshOp)
      meshOp = module.lookupSymbol<mesh::MeshOp>(meshName);
    if (!meshOp && module.lookupSymbol(meshName)) {
      module.emitError("symbol @") << meshName << " already exists and is not a mesh";
      return signalPassFailure();
    }
    if (meshOp && (meshOp.getRank() < 1 || meshOp.getRank() > 3 ||
                   meshOp.getShape()[0] != ranks)) {
      module.emitError("mesh @") << meshOp.getSymName() << " does not have " << ranks
                                 << " devices on its first (data-parallel) axis";
      return signalPassFailure();
    }
    if (!meshOp) {
      meshOp = b.create<mesh::MeshOp>(module.getLoc(), meshName.getValue(),
                                      ArrayRef<int64_t>{ranks});
      // The mesh's one axis is the data-parallel one; upstream meshes number their axes.
      meshOp->setAttr("graph.axis_names", b.getStrArrayAttr({"dp"}));
    }
    step->setAttr(dp::kMeshAttr, FlatSymbolRefAttr::get(meshOp.getSymNameAttr()));
    step->setAttr(dp::kZeroStageAttr, b.getI64IntegerAttr(zero));

    // Graph inputs split along their batch (dim 0 unless propagation found another and
    // recorded it), parameters and optimizer state replicated or, under ZeRO, flat shards.
    auto meshRef = FlatSymbolRefAttr::get(meshOp.getSymNameAttr());
    auto replicated = mesh::MeshShardingAttr::get(&getContext(), meshRef,
                                                  ArrayRef<SmallVector<mesh::MeshAxis>>{});
    auto batchOnDim0 = mesh::MeshShardingAttr::get(
        &getContext(), meshRef, ArrayRef<SmallVector<mesh::MeshAxis>>{{0}});
    llvm::StringSet<> bufferNames;
    for (unsigned i = 0; i < step.getNumResults(); ++i)
      if (auto name = step.getResultAttrOfType<StringAttr>(i, graph::kBufferAttr))
        bufferNames.insert(name.getValue());
    // A parameter or state split on tp (propagation's TP layout) keeps its split; under ZeRO
    // its flat shard is of the device's block.
    auto layout = [&](DictionaryAttr attrs, Type type, Attribute tpSplit) -> Attribute {
      auto block = dp::tensorParallelBlock(tpSplit);
      auto flat = [&] {
        return graph::FlatShardAttr::get(&getContext(), meshRef, 0,
                                         cast<RankedTensorType>(type).getShape(), block);
      };
      Attribute whole = block ? Attribute(block) : Attribute(replicated);
      if (!attrs)
        return replicated;
      if (attrs.get(graph::kInputAttr))
        return cast<RankedTensorType>(type).getRank() ? Attribute(batchOnDim0) : replicated;
      // The loss scaler's scalars are the step's, not a parameter's: every rank holds them.
      if (auto state = attrs.getAs<StringAttr>(kStateAttr))
        return zero >= 1 && !isLossScaleState(state.getValue()) ? Attribute(flat()) : whole;
      // Buffers the step updates (a few statistics each) stay whole: their new values are
      // computed whole, from statistics of the global batch.
      if (attrs.get(graph::kBufferAttr) || attrs.get(graph::kPipelineCopyAttr))
        return whole;
      if (auto param = attrs.getAs<StringAttr>(graph::kParamAttr))
        return zero == 3 && !bufferNames.contains(param.getValue()) ? Attribute(flat()) : whole;
      return whole;
    };
    // The tp split of each parameter and state by name, for the results that return them.
    // (and its groups, when it is strided).
    llvm::StringMap<Attribute> splitByName, groupsByName;
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      auto split = step.getArgAttrOfType<mesh::MeshShardingAttr>(i, dp::kShardingAttr);
      for (StringRef key : {graph::kParamAttr, kStateAttr})
        if (auto name = step.getArgAttrOfType<StringAttr>(i, key); name && split) {
          splitByName[name.getValue()] = split;
          if (Attribute groups = step.getArgAttr(i, graph::kSplitGroupsAttr))
            groupsByName[name.getValue()] = groups;
        }
    }
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      if (zero == 3 && step.getArgAttr(i, graph::kPipelineCopyAttr)) {
        auto name = step.getArgAttrOfType<StringAttr>(i, graph::kParamAttr);
        step.emitError("--strategy zero=3 with pipeline stages: parameter '")
            << (name ? name.getValue() : "?") << "' is read on several stages (tied); "
            << "ZeRO-3 of a parameter shared by stages is not supported yet (use zero=1 or 2)";
        return signalPassFailure();
      }
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      DictionaryAttr attrs = step.getArgAttrDict(i);
      auto split = step.getArgAttrOfType<mesh::MeshShardingAttr>(i, dp::kShardingAttr);
      if (split && attrs && attrs.get(graph::kInputAttr))
        continue; // the batch's split, from propagation
      step.setArgAttr(i, dp::kShardingAttr,
                      layout(attrs, step.getArgument(i).getType(), split));
    }
    for (unsigned i = 0; i < step.getNumResults(); ++i) {
      DictionaryAttr attrs = step.getResultAttrDict(i);
      Type type = step.getFunctionType().getResult(i);
      Attribute split, groups;
      for (StringRef key : {graph::kParamAttr, kStateAttr})
        if (auto name = attrs ? attrs.getAs<StringAttr>(key) : nullptr) {
          split = splitByName.lookup(name.getValue());
          groups = groupsByName.lookup(name.getValue());
        }
      if (groups)
        step.setResultAttr(i, graph::kSplitGroupsAttr, groups);
      Attribute l = attrs && attrs.get(graph::kOutputAttr) ? Attribute(replicated)
                                                           : layout(attrs, type, split);
      step.setResultAttr(i, dp::kShardingAttr, l);
    }
  }
};

} // namespace
} // namespace shardc
