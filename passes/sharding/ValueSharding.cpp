//===- ValueSharding.cpp ----------------------------------------------------------------===//
#include "passes/sharding/ValueSharding.h"

#include <algorithm>

using namespace mlir;

namespace shardc::sharding {

mesh::MeshShardingAttr getSharding(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    return func ? func.getArgAttrOfType<mesh::MeshShardingAttr>(arg.getArgNumber(),
                                                                 kArgShardingAttr)
                : nullptr;
  }
  Operation *def = v.getDefiningOp();
  auto all = def->getAttrOfType<ArrayAttr>(kResultShardingsAttr);
  if (!all)
    return nullptr;
  auto s = dyn_cast<mesh::MeshShardingAttr>(all[cast<OpResult>(v).getResultNumber()]);
  return s;
}

void setSharding(Value v, mesh::MeshShardingAttr sharding) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (sharding)
      func.setArgAttr(arg.getArgNumber(), kArgShardingAttr, sharding);
    else
      func.removeArgAttr(arg.getArgNumber(), kArgShardingAttr);
    return;
  }
  Operation *def = v.getDefiningOp();
  Builder b(def->getContext());
  SmallVector<Attribute> all;
  if (auto existing = def->getAttrOfType<ArrayAttr>(kResultShardingsAttr))
    all.assign(existing.begin(), existing.end());
  else
    all.assign(def->getNumResults(), b.getUnitAttr());
  all[cast<OpResult>(v).getResultNumber()] = sharding ? Attribute(sharding) : b.getUnitAttr();
  if (llvm::all_of(all, [](Attribute a) { return isa<UnitAttr>(a); }))
    def->removeAttr(kResultShardingsAttr);
  else
    def->setAttr(kResultShardingsAttr, b.getArrayAttr(all));
}

SmallVector<int64_t> splitGroups(Value v) {
  auto rank = cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<int64_t> groups(rank, 1);
  DenseI64ArrayAttr stored;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      stored = func.getArgAttrOfType<DenseI64ArrayAttr>(arg.getArgNumber(),
                                                        graph::kSplitGroupsAttr);
  } else if (auto all = v.getDefiningOp()->getAttrOfType<ArrayAttr>(graph::kSplitGroupsAttr)) {
    stored = dyn_cast<DenseI64ArrayAttr>(all[cast<OpResult>(v).getResultNumber()]);
  }
  if (stored)
    for (auto [d, g] : llvm::enumerate(stored.asArrayRef()))
      if (static_cast<int64_t>(d) < rank && g > 1)
        groups[d] = g;
  return groups;
}

void setSplitGroups(Value v, ArrayRef<int64_t> groups) {
  bool strided = llvm::any_of(groups, [](int64_t g) { return g > 1; });
  Builder b(v.getContext());
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (strided)
      func.setArgAttr(arg.getArgNumber(), graph::kSplitGroupsAttr,
                      b.getDenseI64ArrayAttr(groups));
    else
      func.removeArgAttr(arg.getArgNumber(), graph::kSplitGroupsAttr);
    return;
  }
  Operation *def = v.getDefiningOp();
  SmallVector<Attribute> all;
  if (auto existing = def->getAttrOfType<ArrayAttr>(graph::kSplitGroupsAttr))
    all.assign(existing.begin(), existing.end());
  else
    all.assign(def->getNumResults(), b.getUnitAttr());
  all[cast<OpResult>(v).getResultNumber()] =
      strided ? Attribute(b.getDenseI64ArrayAttr(groups)) : b.getUnitAttr();
  if (llvm::all_of(all, [](Attribute a) { return isa<UnitAttr>(a); }))
    def->removeAttr(graph::kSplitGroupsAttr);
  else
    def->setAttr(graph::kSplitGroupsAttr, b.getArrayAttr(all));
}

SmallVector<SmallVector<mesh::MeshAxis>> splitAxes(Value v) {
  auto rank = cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<SmallVector<mesh::MeshAxis>> axes(rank);
  if (auto s = getSharding(v))
    for (auto [d, a] : llvm::enumerate(s.getSplitAxes()))
      if (static_cast<int64_t>(d) < rank)
        axes[d].assign(a.asArrayRef().begin(), a.asArrayRef().end());
  return axes;
}

mesh::MeshShardingAttr makeSharding(FlatSymbolRefAttr mesh,
                                    ArrayRef<SmallVector<mesh::MeshAxis>> axesOfDim,
                                    ArrayRef<mesh::MeshAxis> partialAxes) {
  bool split = llvm::any_of(axesOfDim, [](const auto &a) { return !a.empty(); });
  if (!split && partialAxes.empty())
    return nullptr;
  // Trailing whole dimensions are left out, as upstream prints them.
  size_t n = axesOfDim.size();
  while (n > 0 && axesOfDim[n - 1].empty())
    --n;
  return mesh::MeshShardingAttr::get(mesh.getContext(), mesh, axesOfDim.take_front(n),
                                     partialAxes, mesh::ReductionKind::Sum);
}

int64_t bytesPerElement(mlir::RankedTensorType type) {
  return std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

} // namespace shardc::sharding
