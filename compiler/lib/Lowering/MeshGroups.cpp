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

std::vector<int64_t> meshCoordinate(const MeshLayout &mesh, int rank) {
  std::vector<int64_t> coord(mesh.axisSizes.size());
  int64_t rest = rank;
  for (size_t a = mesh.axisSizes.size(); a-- > 0;) {
    coord[a] = rest % mesh.axisSizes[a];
    rest /= mesh.axisSizes[a];
  }
  return coord;
}

void setMeshOfRank(program::Program &program, const MeshLayout &mesh, int rank) {
  program.clear_mesh_axes();
  program.clear_mesh_coordinate();
  program.clear_groups();
  if (mesh.axisSizes.size() < 2)
    return;
  std::vector<int64_t> coord = meshCoordinate(mesh, rank);
  for (size_t a = 0; a < mesh.axisSizes.size(); ++a) {
    program::MeshAxis *axis = program.add_mesh_axes();
    axis->set_name(mesh.axisNames[a]);
    axis->set_size(static_cast<int32_t>(mesh.axisSizes[a]));
    program.add_mesh_coordinate(static_cast<int32_t>(coord[a]));
  }
  // Group a: the ranks that share this rank's coordinates on every axis but a.
  for (size_t a = 0; a < mesh.axisSizes.size(); ++a) {
    program::CommGroup *group = program.add_groups();
    group->set_name(mesh.axisNames[a]);
    group->add_mesh_axes(static_cast<int32_t>(a));
    for (int64_t i = 0; i < mesh.axisSizes[a]; ++i) {
      std::vector<int64_t> c = coord;
      c[a] = i;
      int64_t r = 0;
      for (size_t b = 0; b < c.size(); ++b)
        r = r * mesh.axisSizes[b] + c[b];
      group->add_ranks(static_cast<int32_t>(r));
    }
  }
}

} // namespace shardc
