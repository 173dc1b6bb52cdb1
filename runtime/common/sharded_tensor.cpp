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
  if (hasBlocks(sharding)) {
    int64_t &dim = shape[static_cast<size_t>(sharding.block_dim())];
    dim = (sharding.padded_dim_size() > 0 ? sharding.padded_dim_size() : dim) /
          sharding.num_blocks();
  }
  return shape;
}

int64_t blockNumelOf(const program::Sharding &sharding) {
  int64_t n = 1;
  for (int64_t d : blockShapeOf(sharding))
    n *= d;
  return n;
}

namespace {

// A block as runs of the whole tensor: `outer` runs, block b's run o holding `blockRows` rows
// of `rowElements` elements (the dimensions after block_dim), which start at row b * blockRows
// of the whole's run o, `wholeRows` rows long. Without padding the blocks tile the dimension;
// with it a block's rows past the whole's end are its zero padding.
struct BlockRuns {
  int64_t outer = 1, rowElements = 1, blockRows = 1, wholeRows = 1;
};

BlockRuns blockRunsOf(const program::Sharding &sharding) {
  BlockRuns runs;
  const std::vector<int64_t> block = blockShapeOf(sharding);
  if (!hasBlocks(sharding)) {
    for (int64_t d : block)
      runs.rowElements *= d;
    return runs;
  }
  const size_t dim = static_cast<size_t>(sharding.block_dim());
  for (size_t d = 0; d < block.size(); ++d)
    if (d != dim)
      (d < dim ? runs.outer : runs.rowElements) *= block[d];
  runs.blockRows = block[dim];
  runs.wholeRows = sharding.global_shape(static_cast<int>(dim));
  // A strided split: the groups of block_dim are outer runs too, each block holding
  // 1/groups of the block's rows of each (never padded: checkSharding).
  if (sharding.block_groups() > 1) {
    runs.outer *= sharding.block_groups();
    runs.blockRows /= sharding.block_groups();
    runs.wholeRows /= sharding.block_groups();
  }
  return runs;
}

// Calls copy(blockElement, wholeElement, count) for each run of block `index` that lies in the
// whole tensor and pad(blockElement, count) for each run of its padding.
template <typename Copy, typename Pad>
void walkBlock(const program::Sharding &sharding, int64_t index, Copy copy, Pad pad) {
  const BlockRuns runs = blockRunsOf(sharding);
  const int64_t first = index * runs.blockRows;
  const int64_t real = std::clamp<int64_t>(runs.wholeRows - first, 0, runs.blockRows);
  for (int64_t o = 0; o < runs.outer; ++o) {
    const int64_t blockAt = o * runs.blockRows * runs.rowElements;
    copy(blockAt, (o * runs.wholeRows + first) * runs.rowElements, real * runs.rowElements);
    if (real < runs.blockRows)
      pad(blockAt + real * runs.rowElements, (runs.blockRows - real) * runs.rowElements);
  }
}

} // namespace

void copyBlock(const program::Sharding &sharding, int64_t index, const void *whole, void *block,
               size_t elementBytes) {
  auto *to = static_cast<char *>(block);
  const auto *from = static_cast<const char *>(whole);
  walkBlock(
      sharding, index,
      [&](int64_t at, int64_t wholeAt, int64_t count) {
        std::memcpy(to + static_cast<size_t>(at) * elementBytes,
                    from + static_cast<size_t>(wholeAt) * elementBytes,
                    static_cast<size_t>(count) * elementBytes);
      },
      [&](int64_t at, int64_t count) {
        std::memset(to + static_cast<size_t>(at) * elementBytes, 0,
                    static_cast<size_t>(count) * elementBytes);
      });
}

void placeBlock(const program::Sharding &sharding, int64_t index, const void *block, void *whole,
                size_t elementBytes) {
  auto *to = static_cast<char *>(whole);
  const auto *from = static_cast<const char *>(block);
  walkBlock(
      sharding, index,
      [&](int64_t at, int64_t wholeAt, int64_t count) {
        std::memcpy(to + static_cast<size_t>(wholeAt) * elementBytes,
                    from + static_cast<size_t>(at) * elementBytes,
                    static_cast<size_t>(count) * elementBytes);
      },
      [](int64_t, int64_t) {}); // the padding is dropped
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
