// The communicators of a program's groups (Program.groups): each a slice of the mesh through
// this rank, made by splitting the rank's world communicator.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <memory>
#include <vector>

namespace shardc::runtime {

// Splits `world` (the rank's communicator over every rank of the run, of world_size ranks with
// this program's rank) into the program's groups: a collective that every rank of the world
// calls once, with its own program, after validateProgram accepted it. One split per group,
// in increasing order of the groups' mesh_axes (the same order on every rank, whatever the
// order of Program.groups): along a group's axes, color = the rank's coordinates on the other
// axes and key = its coordinates on the group's, so a group's ranks are numbered as its `ranks`
// list them. (*groups)[i] is Program.groups(i)'s communicator, named after it. A group whose
// members turn out other than its `ranks` (the ranks' programs disagree on their groups) is an
// error naming both lists. Errors start with "rank R: " (R: this rank in the world).
Status createGroupCommunicators(const program::Program &program, Communicator &world,
                                std::vector<std::unique_ptr<Communicator>> *groups);

} // namespace shardc::runtime
