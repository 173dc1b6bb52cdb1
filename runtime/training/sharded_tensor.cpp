#include "runtime/training/sharded_tensor.h"

#include "runtime/support/quote.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace shardc::runtime {

std::vector<int64_t> globalShapeOf(const program::Sharding &sharding) {
  return std::vector<int64_t>(sharding.global_shape().begin(), sharding.global_shape().end());
}

int64_t globalNumelOf(const program::Sharding &sharding) {
  int64_t numel = 1;
  for (int64_t dim : sharding.global_shape())
    numel *= dim;
  return numel;
}

bool hasBlocks(const program::Sharding &sharding) { return sharding.num_blocks() > 1; }

std::vector<int64_t> blockShapeOf(const program::Sharding &sharding) {
  std::vector<int64_t> shape = globalShapeOf(sharding);
  if (hasBlocks(sharding))
    shape[static_cast<size_t>(sharding.block_dim())] /= sharding.num_blocks();
  return shape;
}

namespace {

int64_t numelOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

// A block as runs of the whole tensor: `outer` runs of `inner` elements, block b's run o at
// element (o * num_blocks + b) * inner of the whole.
struct BlockRuns {
  int64_t outer = 1, inner = 1;
};

BlockRuns blockRunsOf(const program::Sharding &sharding) {
  BlockRuns runs;
  const std::vector<int64_t> block = blockShapeOf(sharding);
  const size_t dim = hasBlocks(sharding) ? static_cast<size_t>(sharding.block_dim()) : 0;
  for (size_t d = 0; d < block.size(); ++d)
    (d < dim ? runs.outer : runs.inner) *= block[d];
  // A strided split: the groups of block_dim are outer runs too, each block holding
  // 1/groups of the block's extent along it.
  if (hasBlocks(sharding) && sharding.block_groups() > 1) {
    runs.outer *= sharding.block_groups();
    runs.inner /= sharding.block_groups();
  }
  return runs;
}

} // namespace

void copyBlock(const program::Sharding &sharding, int64_t index, const void *whole, void *block,
               size_t elementBytes) {
  const BlockRuns runs = blockRunsOf(sharding);
  const int64_t n = std::max(sharding.num_blocks(), 1);
  const size_t run = static_cast<size_t>(runs.inner) * elementBytes;
  for (int64_t o = 0; o < runs.outer; ++o)
    std::memcpy(static_cast<char *>(block) + static_cast<size_t>(o) * run,
                static_cast<const char *>(whole) + static_cast<size_t>(o * n + index) * run, run);
}

ShardPlace shardPlaceOf(const program::Program &program, const program::Sharding &sharding) {
  ShardPlace place;
  if (hasBlocks(sharding))
    place.block = program.mesh_coordinate(sharding.block_axis());
  if (sharding.num_shards() > 1)
    place.shard = program.mesh_axes_size() > 0 && sharding.shard_axis() >= 0
                      ? program.mesh_coordinate(sharding.shard_axis())
                      : program.rank();
  return place;
}

Status checkSharding(const program::Sharding &sharding, const program::Buffer &buffer,
                     const program::Program &program) {
  std::string global = describeTensorType(buffer.dtype(), sharding.global_shape());
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
    if (dim < 0 || dim >= sharding.global_shape_size() || sharding.block_groups() < 0 ||
        sharding.global_shape(dim) % (groups * sharding.num_blocks()) != 0)
      return Status::error("dim " + std::to_string(dim) + " of " + global +
                           " cannot be cut into " +
                           (groups > 1 ? std::to_string(groups) + " groups of " : "") +
                           std::to_string(sharding.num_blocks()) + " equal blocks");
  }
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
  const int64_t blockNumel = numelOf(block);
  if (sharding.shard_numel() < 0 || sharding.shard_numel() > limit / std::max(shards, 1) ||
      sharding.shard_numel() * shards < blockNumel ||
      (shards == 1 && sharding.shard_numel() != blockNumel))
    return Status::error(std::to_string(shards) + " shards of " +
                         std::to_string(sharding.shard_numel()) + " elements cannot hold " +
                         describeTensorType(program::F32, block));
  std::vector<int64_t> shape(buffer.shape().begin(), buffer.shape().end());
  const bool flat = shape == std::vector<int64_t>{sharding.shard_numel()};
  if (!flat && !(shards == 1 && shape == block))
    return Status::error(
        "a part of " + global + " must be " +
        describeTensorType(program::F32, std::vector<int64_t>{sharding.shard_numel()}) +
        (shards == 1 ? " or " + describeTensorType(program::F32, block) : std::string()) +
        ", the buffer is " + describeTensorType(buffer.dtype(), buffer.shape()));
  return Status::ok();
}

Status sliceShard(const program::Sharding &sharding, ShardPlace place, const HostTensor &full,
                  HostTensor *part) {
  std::string expected = describeTensorType(program::F32, sharding.global_shape());
  if (full.describe() != expected)
    return Status::error("is " + full.describe() + ", expected " + expected);
  std::vector<float> blockValues;
  const float *blockData = full.as<float>();
  int64_t blockNumel = full.numel();
  if (hasBlocks(sharding)) {
    blockNumel = numelOf(blockShapeOf(sharding));
    blockValues.resize(static_cast<size_t>(blockNumel));
    copyBlock(sharding, place.block, full.as<float>(), blockValues.data(), sizeof(float));
    blockData = blockValues.data();
  }
  const int64_t shardNumel = sharding.shard_numel();
  if (part->dtype != program::F32 || part->numel() != shardNumel)
    reshapeHostTensor(program::F32, {shardNumel}, part);
  const int64_t begin = std::min<int64_t>(int64_t(place.shard) * shardNumel, blockNumel);
  const int64_t end = std::min<int64_t>(begin + shardNumel, blockNumel);
  float *dst = part->as<float>();
  if (end > begin)
    std::memcpy(dst, blockData + begin, static_cast<size_t>(end - begin) * sizeof(float));
  std::fill(dst + (end - begin), dst + shardNumel, 0.0f); // the padding of the last shards
  return Status::ok();
}

namespace {

// Every rank's `count` elements of `in` in rank order, from `comm` (of `ranks` ranks; unused
// when there is one part: a tensor not split along the communicator's axis).
Status gatherAll(Communicator *comm, int ranks, const float *in, size_t count,
                 std::vector<float> *out) {
  ranks = std::max(ranks, 1);
  if (ranks > 1 && (comm == nullptr || comm->size() != ranks))
    return Status::error("gathering " + std::to_string(ranks) + " parts needs a communicator of " +
                         std::to_string(ranks) + " ranks");
  out->resize(count * static_cast<size_t>(ranks));
  if (ranks == 1) {
    std::memcpy(out->data(), in, count * sizeof(float));
    return Status::ok();
  }
  return comm->allGather(in, out->data(), count);
}

} // namespace

Status gatherShards(Communicator *shardComm, Communicator *blockComm,
                    const program::Sharding &sharding, const HostTensor &part, HostTensor *full) {
  const int64_t shardNumel = sharding.shard_numel();
  if (part.dtype != program::F32 || part.numel() != shardNumel)
    return Status::error("part is " + part.describe() + ", expected " +
                         std::to_string(shardNumel) + " f32 elements");
  // The block: every shard in shard order, padding included, then the padding cut off.
  std::vector<float> shards;
  SHARDC_RETURN_IF_ERROR(gatherAll(shardComm, sharding.num_shards(), part.as<float>(),
                                   static_cast<size_t>(shardNumel), &shards));
  const std::vector<int64_t> global = globalShapeOf(sharding), block = blockShapeOf(sharding);
  const int64_t blockNumel = numelOf(block);
  *full = makeHostTensor(program::F32, global);
  if (!hasBlocks(sharding)) {
    if (blockNumel > 0)
      std::memcpy(full->as<float>(), shards.data(), static_cast<size_t>(blockNumel) * sizeof(float));
    return Status::ok();
  }
  std::vector<float> blocks;
  SHARDC_RETURN_IF_ERROR(gatherAll(blockComm, sharding.num_blocks(), shards.data(),
                                   static_cast<size_t>(blockNumel), &blocks));
  // Block b's runs interleave into the full tensor along block_dim (copyBlock's inverse).
  const BlockRuns runs = blockRunsOf(sharding);
  const int64_t n = sharding.num_blocks();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < runs.outer; ++o)
      std::memcpy(full->as<float>() + (o * n + b) * runs.inner,
                  blocks.data() + b * blockNumel + o * runs.inner,
                  static_cast<size_t>(runs.inner) * sizeof(float));
  return Status::ok();
}

} // namespace shardc::runtime
