#include "runtime/loader/rank_program.h"

#include "runtime/common/mesh.h"
#include "runtime/common/sharded_tensor.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_traits.h"
#include "runtime/loader/program_validation.h"
#include "runtime/loader/sharding_validation.h"
#include "runtime/program/bindings.h"
#include "runtime/support/quote.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace shardc::runtime {

Status placeOnMesh(int rank, program::Program *p) {
  if (p->mesh_axes_size() == 0)
    return p->groups_size() == 0 ? Status::ok()
                                 : Status::error("the program has groups but no mesh_axes");
  if (p->mesh_coordinate_size() != 0)
    return Status::error("a shared program has a mesh_coordinate (the placement gives it)");
  std::vector<int64_t> sizes;
  int64_t ranks = 1;
  for (const program::MeshAxis &axis : p->mesh_axes()) {
    if (axis.size() < 1 || ranks > p->world_size())
      return Status::error("mesh axis " + quoteForMessage(axis.name()) + " has size " +
                           std::to_string(axis.size()) + " (the mesh does not have world_size = " +
                           std::to_string(p->world_size()) + " ranks)");
    ranks *= axis.size();
    sizes.push_back(axis.size());
  }
  if (ranks != p->world_size())
    return Status::error("the mesh does not have world_size = " + std::to_string(p->world_size()) +
                         " ranks");
  const std::vector<int64_t> coordinate = meshCoordinate(sizes, rank);
  for (int64_t c : coordinate)
    p->add_mesh_coordinate(static_cast<int32_t>(c));
  for (program::CommGroup &group : *p->mutable_groups()) {
    if (group.ranks_size() != 0)
      return Status::error("group " + quoteForMessage(group.name()) +
                           ": a shared program's group lists ranks (the placement gives them)");
    std::vector<int> axes;
    for (int32_t axis : group.mesh_axes()) {
      if (axis < 0 || axis >= p->mesh_axes_size() || (!axes.empty() && axis <= axes.back()))
        return Status::error("group " + quoteForMessage(group.name()) + ": mesh axis " +
                             std::to_string(axis) + " does not exist or is out of order");
      axes.push_back(axis);
    }
    for (int r : meshSlice(sizes, coordinate, axes).ranks)
      group.add_ranks(r);
  }
  return Status::ok();
}

namespace {

// Points each sharded initial value at this rank's part of the whole parameter: its block's
// copy (or the whole value), then its flat shard of the block, trimmed where the shard runs
// past the block's end (the rest of the buffer starts as zeros).
Status placeInitialValues(program::Program *p) {
  for (program::StateInit &init : *p->mutable_state_init()) {
    const std::string what = "state_init " + quoteForMessage(init.name());
    const program::Binding *binding = findBinding(p->inputs(), init.name());
    if (binding == nullptr || !binding->has_sharding()) {
      if (init.block_offsets_size() != 0)
        return Status::error(what + ": block_offsets for an input that is not cut into blocks");
      continue;
    }
    if (binding->buffer() < 0 || binding->buffer() >= p->buffers_size())
      return Status::error(what + ": its input's buffer does not exist");
    const program::Sharding &s = binding->sharding();
    Status valid = checkSharding(s, p->buffers(binding->buffer()), *p);
    if (!valid.isOk())
      return Status::error("input " + quoteForMessage(binding->name()) + ": " + valid.message());
    const uint64_t elementBytes = dtypeSize(p->buffers(binding->buffer()).dtype());
    const uint64_t wholeBytes = static_cast<uint64_t>(globalNumelOf(s)) * elementBytes;
    if (init.size_bytes() != wholeBytes || init.offset() > UINT64_MAX - wholeBytes)
      return Status::error(what + ": size_bytes is " + std::to_string(init.size_bytes()) +
                           " but the whole parameter has " + std::to_string(wholeBytes));
    uint64_t blockNumel = 1;
    for (int64_t d : blockShapeOf(s))
      blockNumel *= static_cast<uint64_t>(d);
    const ShardPlace place = shardPlaceOf(*p, s);
    uint64_t base = init.offset();
    if (hasBlocks(s)) {
      if (init.block_offsets_size() != s.num_blocks())
        return Status::error(what + ": " + std::to_string(init.block_offsets_size()) +
                             " block_offsets for " + std::to_string(s.num_blocks()) + " blocks");
      base = init.block_offsets(place.block);
      if (base > UINT64_MAX - blockNumel * elementBytes)
        return Status::error(what + ": block offset " + std::to_string(base) + " overflows");
    } else if (init.block_offsets_size() != 0) {
      return Status::error(what + ": block_offsets for an input that is not cut into blocks");
    }
    const uint64_t k = static_cast<uint64_t>(s.shard_numel());
    const uint64_t first = std::min(blockNumel, k * static_cast<uint64_t>(place.shard));
    const uint64_t count = std::min(k, blockNumel - first);
    init.set_offset(base + first * elementBytes);
    init.set_size_bytes(count * elementBytes);
    init.clear_block_offsets();
  }
  return Status::ok();
}

// A kernel keyed on the whole tensor's element indices (dropout's mask) of a tensor split along
// the batch: this rank's block starts at its first row, and a microbatch's block split_first
// further.
Status placeDropouts(program::Program *p) {
  for (program::Op &op : *p->mutable_ops()) {
    auto unit = op.attrs().find("split_unit");
    if (!kernelHasTrait(op.kernel(), kKeyedOnGlobalIndexKernel) || unit == op.attrs().end())
      continue;
    const int64_t perRow = unit->second.i();
    auto firstAttr = op.attrs().find("split_first");
    const int64_t first = firstAttr == op.attrs().end() ? 0 : firstAttr->second.i();
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    if (perRow < 0 || (perRow > 0 && p->batch_begin() > kMax / perRow))
      return Status::error("op " + quoteForMessage(op.name()) + ": split_unit " +
                           std::to_string(perRow) + " is negative or too large");
    if (first < 0 || first > kMax - p->batch_begin() * perRow)
      return Status::error("op " + quoteForMessage(op.name()) + ": split_first " +
                           std::to_string(first) + " is negative or too large");
    (*op.mutable_attrs())["split_offset"].set_i(p->batch_begin() * perRow + first);
  }
  return Status::ok();
}

// Kernels that hold a block of a dimension split on a mesh axis and need to know where it lies
// in the whole: one that picks entries by index (a vocab-parallel embedding or loss:
// index_block_axis/_size -> index_offset) and a dropout keyed on the whole tensor's indices
// (block_axis/_size -> block_offset). The block is the one at this rank's coordinate on that
// axis.
Status placeMeshBlocks(program::Program *p) {
  struct BlockAttrs {
    const char *axis, *size, *offset;
  };
  static constexpr BlockAttrs kBlocks[] = {{"index_block_axis", "index_block_size", "index_offset"},
                                           {"block_axis", "block_size", "block_offset"}};
  for (program::Op &op : *p->mutable_ops())
    for (const BlockAttrs &names : kBlocks) {
      auto axis = op.attrs().find(names.axis);
      if (axis == op.attrs().end())
        continue;
      auto size = op.attrs().find(names.size);
      const int64_t a = axis->second.i();
      if (size == op.attrs().end() || a < 0 || a >= p->mesh_coordinate_size() ||
          size->second.i() < 0 ||
          size->second.i() > std::numeric_limits<int64_t>::max() / p->world_size())
        return Status::error("op " + quoteForMessage(op.name()) + ": " + names.axis + " / " +
                             names.size + " name no block of the mesh");
      (*op.mutable_attrs())[names.offset].set_i(p->mesh_coordinate(static_cast<int>(a)) *
                                                 size->second.i());
    }
  return Status::ok();
}

} // namespace

bool isPlacedBundle(const program::Bundle &bundle) { return bundle.ranks_size() > 0; }

int programIndexOfRank(const program::Bundle &bundle, int rank) {
  if (!isPlacedBundle(bundle))
    return rank >= 0 && rank < bundle.programs_size() ? rank : -1;
  if (rank < 0 || rank >= bundle.ranks_size())
    return -1;
  const int index = bundle.ranks(rank).program();
  return index >= 0 && index < bundle.programs_size() ? index : -1;
}

Status programOfRank(const program::Bundle &bundle, int rank, program::Program *out) {
  const int index = programIndexOfRank(bundle, rank);
  if (index < 0) {
    if (!isPlacedBundle(bundle))
      return Status::error("no program for rank " + std::to_string(rank) + " (the bundle has " +
                           std::to_string(bundle.programs_size()) + ")");
    if (rank < 0 || rank >= bundle.ranks_size())
      return Status::error("no placement for rank " + std::to_string(rank));
    return Status::error("the placement of rank " + std::to_string(rank) + " names program " +
                         std::to_string(bundle.ranks(rank).program()) + " (the bundle has " +
                         std::to_string(bundle.programs_size()) + ")");
  }
  *out = bundle.programs(index);
  if (isPlacedBundle(bundle)) {
    const program::RankPlacement &placement = bundle.ranks(rank);
    if (out->rank() != 0 || out->batch_begin() != 0)
      return Status::error("shared program " + std::to_string(index) +
                           " has a rank or batch_begin of its own (the placement gives them)");
    if (out->world_size() != bundle.world_size())
      return Status::error("shared program " + std::to_string(index) + " has world_size " +
                           std::to_string(out->world_size()) + " but the bundle has " +
                           std::to_string(bundle.world_size()));
    const int64_t begin = placement.batch_begin();
    if (begin < 0 || out->batch_rows() < 0 || begin > out->global_batch_rows() - out->batch_rows())
      return Status::error("batch rows [" + std::to_string(begin) + ", +" +
                           std::to_string(out->batch_rows()) + ") do not lie in the " +
                           std::to_string(out->global_batch_rows()) + " rows of the global batch");
    out->set_rank(rank);
    out->set_batch_begin(begin);
    SHARDC_RETURN_IF_ERROR(placeOnMesh(rank, out));
    SHARDC_RETURN_IF_ERROR(placeInitialValues(out));
    SHARDC_RETURN_IF_ERROR(placeDropouts(out));
    SHARDC_RETURN_IF_ERROR(placeMeshBlocks(out));
  }
  return validateProgram(*out);
}

} // namespace shardc::runtime
