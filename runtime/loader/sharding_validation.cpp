#include "runtime/loader/sharding_validation.h"

#include "runtime/common/sharded_tensor.h"
#include "runtime/kernels/kernel.h"
#include "runtime/support/quote.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace shardc::runtime {

namespace {

// "f32[2x3]", as the kernels describe a tensor of this type.
template <typename Dims> std::string typeText(program::DType dtype, const Dims &dims) {
  return typeOnlyTensor(dtype, std::vector<int64_t>(dims.begin(), dims.end())).describe();
}

} // namespace

Status checkSharding(const program::Sharding &sharding, const program::Buffer &buffer,
                     const program::Program &program) {
  std::string global = typeText(buffer.dtype(), sharding.global_shape());
  if (buffer.dtype() != program::F32)
    return Status::error("sharded tensor " + global + " is not f32 (only f32 tensors are sharded)");
  // numel * num_shards must not overflow, whatever a corrupt program says.
  const int64_t limit = std::numeric_limits<int64_t>::max() / 8;
  int64_t numel = 1;
  for (int64_t dim : sharding.global_shape()) {
    if (dim < 0 || (dim != 0 && numel > limit / dim))
      return Status::error("invalid global shape " + global);
    numel *= dim;
  }
  const bool mesh = program.mesh_axes_size() > 0;
  if (hasBlocks(sharding)) {
    const int axis = sharding.block_axis(), dim = sharding.block_dim();
    if (!mesh || axis < 0 || axis >= program.mesh_axes_size())
      return Status::error("blocks along mesh axis " + std::to_string(axis) +
                           ", which the program's mesh does not have");
    if (program.mesh_axes(axis).size() != sharding.num_blocks())
      return Status::error("split into " + std::to_string(sharding.num_blocks()) +
                           " blocks along mesh axis " + quoteForMessage(program.mesh_axes(axis).name()) +
                           " of " + std::to_string(program.mesh_axes(axis).size()) + " ranks");
    const int64_t groups = std::max(sharding.block_groups(), 1);
    if (dim < 0 || dim >= sharding.global_shape_size() || sharding.block_groups() < 0)
      return Status::error("dim " + std::to_string(dim) + " of " + global +
                           " cannot be cut into blocks");
    // A padded dimension: a multiple of the blocks, less than one block longer than the
    // tensor's, never strided.
    const int64_t padded = sharding.padded_dim_size(), whole = sharding.global_shape(dim);
    if (padded != 0 &&
        (padded < whole || groups > 1 || padded % sharding.num_blocks() != 0 ||
         padded - whole >= padded / sharding.num_blocks() || numel / std::max<int64_t>(whole, 1) >
                                                                  limit / padded))
      return Status::error("dim " + std::to_string(dim) + " of " + global +
                           " cannot be padded to " + std::to_string(padded) + " for " +
                           std::to_string(sharding.num_blocks()) + " equal blocks");
    if (padded == 0 && whole % (groups * sharding.num_blocks()) != 0)
      return Status::error("dim " + std::to_string(dim) + " of " + global +
                           " cannot be cut into " +
                           (groups > 1 ? std::to_string(groups) + " groups of " : "") +
                           std::to_string(sharding.num_blocks()) + " equal blocks");
  }
  if (!hasBlocks(sharding) && sharding.padded_dim_size() != 0)
    return Status::error(global + " is padded but not cut into blocks");
  int shardRanks = program.world_size();
  if (mesh && sharding.shard_axis() != -1) {
    if (sharding.shard_axis() < 0 || sharding.shard_axis() >= program.mesh_axes_size())
      return Status::error("flat shards along mesh axis " + std::to_string(sharding.shard_axis()) +
                           ", which the program's mesh does not have");
    shardRanks = program.mesh_axes(sharding.shard_axis()).size();
  }
  const int shards = sharding.num_shards();
  if (shards != 1 && shards != shardRanks)
    return Status::error("split into " + std::to_string(shards) + " shards, but " +
                         std::to_string(shardRanks) + " ranks share them");
  const std::vector<int64_t> block = blockShapeOf(sharding);
  const int64_t blockNumel = blockNumelOf(sharding);
  if (sharding.shard_numel() < 0 || sharding.shard_numel() > limit / std::max(shards, 1) ||
      sharding.shard_numel() * shards < blockNumel ||
      (shards == 1 && sharding.shard_numel() != blockNumel))
    return Status::error(std::to_string(shards) + " shards of " +
                         std::to_string(sharding.shard_numel()) + " elements cannot hold " +
                         typeText(program::F32, block));
  std::vector<int64_t> shape(buffer.shape().begin(), buffer.shape().end());
  const bool flat = shape == std::vector<int64_t>{sharding.shard_numel()};
  if (!flat && !(shards == 1 && shape == block))
    return Status::error(
        "a part of " + global + " must be " +
        typeText(program::F32, std::vector<int64_t>{sharding.shard_numel()}) +
        (shards == 1 ? " or " + typeText(program::F32, block) : std::string()) +
        ", the buffer is " + typeText(buffer.dtype(), buffer.shape()));
  return Status::ok();
}

} // namespace shardc::runtime
