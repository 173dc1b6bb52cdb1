#include "runtime/executor/comm_groups.h"

#include "runtime/common/mesh.h"
#include "runtime/support/quote.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace shardc::runtime {

namespace {

std::string ranksText(const std::vector<int> &ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

std::vector<int> axesOf(const program::CommGroup &group) {
  return std::vector<int>(group.mesh_axes().begin(), group.mesh_axes().end());
}

} // namespace

Status createGroupCommunicators(const program::Program &program, Communicator &world,
                                std::vector<std::unique_ptr<Communicator>> *groups) {
  groups->clear();
  groups->resize(static_cast<size_t>(program.groups_size()));
  std::vector<int64_t> sizes, coordinate;
  for (int i = 0; i < program.mesh_axes_size(); ++i) {
    sizes.push_back(program.mesh_axes(i).size());
    coordinate.push_back(program.mesh_coordinate(i));
  }
  // validateProgram made the axes of every group distinct, so this order is total.
  std::vector<int> order(static_cast<size_t>(program.groups_size()));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return axesOf(program.groups(a)) < axesOf(program.groups(b)); });
  for (int index : order) {
    const program::CommGroup &group = program.groups(index);
    const std::string what =
        "group " + std::to_string(index) + " (" + quoteForMessage(group.name()) + ")";
    const MeshSlice slice = meshSlice(sizes, coordinate, axesOf(group));
    std::unique_ptr<Communicator> comm;
    Status status = world.split(slice.color, slice.key, &comm);
    if (!status.isOk()) // "rank R: split #S: cause" already names the rank
      return Status::error(status.message() + " (creating the communicator of " + what + ")");
    // The members the split gathered, against the ranks the program lists.
    std::vector<int> members, listed;
    for (int r = 0; comm != nullptr && r < comm->size(); ++r)
      members.push_back(comm->worldRankOf(r));
    for (int32_t r : group.ranks())
      listed.push_back(world.worldRankOf(r));
    if (members != listed)
      return Status::error("rank " + std::to_string(world.worldRank()) + ": " + what +
                           ": the ranks that joined it are " + ranksText(members) +
                           ", but the program lists " + ranksText(listed) +
                           " (the ranks' programs disagree on their groups)");
    comm->setGroupName(group.name());
    (*groups)[static_cast<size_t>(index)] = std::move(comm);
  }
  return Status::ok();
}

} // namespace shardc::runtime
