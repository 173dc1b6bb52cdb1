// The ranks of a run laid out on a mesh of named axes (dp x tp, ...), and the groups that
// collectives run over: one slice of the mesh through a rank, along some of its axes.
//
// Ranks are numbered row-major over the axes in their order: on a dp x tp mesh of 2 x 2, rank =
// dp_index * 2 + tp_index, so rank 1 is at (0, 1), its tp group (the slice along tp) is
// {0, 1} and its dp group {1, 3}. A group lists its ranks row-major over its own axes, which is
// also their order as ranks of the world; a rank's place in that list is its rank in the group.
#pragma once

#include <cstdint>
#include <vector>

namespace shardc::runtime {

// The world rank of `coordinate` on a mesh of axis sizes `sizes` (both valid: same length,
// every coordinate in [0, size)).
int64_t meshRank(const std::vector<int64_t> &sizes, const std::vector<int64_t> &coordinate);

// The coordinate of world rank `rank` (in [0, product of sizes)) on a mesh of `sizes`.
std::vector<int64_t> meshCoordinate(const std::vector<int64_t> &sizes, int64_t rank);

// A slice of a mesh through one rank, and how a split creates it (Communicator::split): the
// ranks on the slice pass `color`, a number of the slice's coordinates on the other axes (the
// same for all of them, different for every other slice along the same axes), and `key`, their
// place in the slice.
struct MeshSlice {
  std::vector<int> ranks; // world ranks, in group rank order
  int color = 0;
  int key = 0;
};

// The slice along `axes` (indices into `sizes`, strictly increasing) through `coordinate`.
// The mesh must be valid and hold at most INT32_MAX ranks.
MeshSlice meshSlice(const std::vector<int64_t> &sizes, const std::vector<int64_t> &coordinate,
                    const std::vector<int> &axes);

// The mesh rank a launcher runs as its rank `launchRank` (an MPI rank: mpirun places
// consecutive ranks on one node): the launcher numbers the mesh row-major over its axes with
// axis `innermost` (the tensor-parallel one) moved last, so that each of its groups is
// consecutive launcher ranks, on one node while it fits; the other axes keep their order.
// `innermost` < 0 or the last axis: the mesh's own numbering.
int64_t meshRankOfLaunchRank(const std::vector<int64_t> &sizes, int innermost,
                             int64_t launchRank);

} // namespace shardc::runtime
