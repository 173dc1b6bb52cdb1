//===- MeshGroups.cpp -------------------------------------------------------------------===//
#include "shardc/Lowering/MeshGroups.h"

namespace shardc {

int64_t MeshLayout::size() const {
  int64_t n = 1;
  for (int64_t s : axisSizes)
    n *= s;
  return n;
}

MeshLayout meshLayoutOf(mlir::mesh::MeshOp mesh) {
  MeshLayout layout;
  auto names = mesh->getAttrOfType<mlir::ArrayAttr>("graph.axis_names");
  for (auto [i, size] : llvm::enumerate(mesh.getShape())) {
    auto name = names && i < names.size() ? mlir::dyn_cast<mlir::StringAttr>(names[i]) : nullptr;
    layout.axisNames.push_back(name ? name.str() : "axis" + std::to_string(i));
    layout.axisSizes.push_back(size);
  }
  return layout;
}

CollectiveGroup collectiveGroupOf(const MeshLayout &mesh, llvm::ArrayRef<int16_t> axes) {
  CollectiveGroup g;
  const int64_t rank = static_cast<int64_t>(mesh.axisSizes.size());
  if (axes.empty() || static_cast<int64_t>(axes.size()) == rank) {
    g.ranks = mesh.size();
    g.supported = axes.empty() || llvm::is_sorted(axes);
    return g;
  }
  if (axes.size() != 1 || axes[0] < 0 || axes[0] >= rank) {
    g.supported = false;
    return g;
  }
  g.ranks = mesh.axisSizes[static_cast<size_t>(axes[0])];
  if (rank > 1)
    g.group = axes[0];
  return g;
}

void addMeshAxes(program::Program &program, const MeshLayout &mesh) {
  if (mesh.axisSizes.size() < 2)
    return;
  for (auto [name, size] : llvm::zip(mesh.axisNames, mesh.axisSizes)) {
    program::MeshAxis *axis = program.add_mesh_axes();
    axis->set_name(name);
    axis->set_size(static_cast<int32_t>(size));
  }
}

void addMeshGroups(program::Program &program) {
  program.clear_mesh_coordinate();
  program.clear_groups();
  for (int a = 0; a < program.mesh_axes_size(); ++a) {
    program::CommGroup *group = program.add_groups();
    group->set_name(program.mesh_axes(a).name());
    group->add_mesh_axes(a);
  }
}

} // namespace shardc
