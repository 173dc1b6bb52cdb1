//===- MeshGroups.h - the mesh and communication groups of a program -------------------===//
//
// On a mesh of more than one axis (dp x tp), a program's collectives run over slices of it:
// the program has one group per axis, group i along axis i (program.proto, CommGroup), and a
// collective over one axis names its group (attribute "group"); one over every axis runs over
// the world. A 1-D mesh has no groups: its collectives run over the world, as plain data
// parallelism always has.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_MESHGROUPS_H
#define SHARDC_LOWERING_MESHGROUPS_H

#include "runtime/program/program.pb.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardc {

struct MeshLayout {
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
  int64_t size() const;
};

// The layout of `mesh` (its axis names from graph.axis_names, else "axis<i>").
MeshLayout meshLayoutOf(mlir::mesh::MeshOp mesh);

// The group a collective over mesh axes `axes` (empty: every axis) of a mesh of `meshRank`
// axes runs over: an index into Program.groups, or nullopt for the world. Fails (nullopt in
// `supported`) for a set of axes no group covers.
struct CollectiveGroup {
  bool supported = true;
  std::optional<int64_t> group;
  int64_t ranks = 1;
};
CollectiveGroup collectiveGroupOf(const MeshLayout &mesh, llvm::ArrayRef<int16_t> axes);

// Records `mesh`'s axes in `program` (nothing for a mesh of one axis: no groups either).
void addMeshAxes(program::Program &program, const MeshLayout &mesh);

// Adds the program's groups, one per mesh axis (the slice of the mesh along it), by name and
// axis: each rank's coordinate and the ranks of its groups follow from its rank
// (runtime/loader/rank_program.h). Nothing when the program has no mesh axes.
void addMeshGroups(program::Program &program);

} // namespace shardc

#endif
