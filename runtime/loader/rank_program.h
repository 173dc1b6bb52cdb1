// The program one rank runs, from a bundle of either layout (program.proto, Bundle): a bundle
// with one program per rank holds it as is; a placed bundle holds each distinct program once,
// and the rank's own parts follow from its placement and its rank: the shared program is
// copied and given the rank, its batch rows, its mesh coordinate, the ranks of its groups, its
// slices of the sharded initial values, its dropouts' offsets and the offsets of its index
// blocks (kernels that pick entries of a split dimension by index).
//
// Placing keeps compile time and bundle size independent of the number of ranks: 512 ranks of
// a dp x tp mesh run as many distinct programs as there are distinct batch-row counts.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

namespace shardc::runtime {

// Whether the bundle lists its ranks' placements (shared programs) rather than one program per
// rank.
bool isPlacedBundle(const program::Bundle &bundle);

// The index in bundle.programs() of the program rank `rank` runs (in [0, world_size)): its
// placement's program, or `rank` itself in a bundle of one program per rank. -1 when the
// placement names no program of the bundle.
int programIndexOfRank(const program::Bundle &bundle, int rank);

// Rank `rank`'s mesh coordinate (row-major) and the ranks of each of its groups (the slice of
// the mesh through it along the group's axes), into a shared program `p` that has its mesh
// axes, world_size and groups by axis but no coordinate and no group ranks. Nothing to do
// without mesh axes. Checks the mesh and the groups' axes first.
Status placeOnMesh(int rank, program::Program *p);

// The complete program of rank `rank`, in *out, validated (validateProgram). Errors name what
// is wrong with the bundle (the caller names the file and, on more than one rank, the rank).
Status programOfRank(const program::Bundle &bundle, int rank, program::Program *out);

} // namespace shardc::runtime
