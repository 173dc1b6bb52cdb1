#include "runtime/common/sharded_tensor.h"

#include <algorithm>
#include <cstring>

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

int64_t blockNumelOf(const program::Sharding &sharding) {
  int64_t n = 1;
  for (int64_t d : blockShapeOf(sharding))
    n *= d;
  return n;
}

namespace {

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

void placeBlock(const program::Sharding &sharding, int64_t index, const void *block, void *whole,
                size_t elementBytes) {
  const BlockRuns runs = blockRunsOf(sharding);
  const int64_t n = std::max(sharding.num_blocks(), 1);
  const size_t run = static_cast<size_t>(runs.inner) * elementBytes;
  for (int64_t o = 0; o < runs.outer; ++o)
    std::memcpy(static_cast<char *>(whole) + static_cast<size_t>(o * n + index) * run,
                static_cast<const char *>(block) + static_cast<size_t>(o) * run, run);
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

} // namespace shardc::runtime
