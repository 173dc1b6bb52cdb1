// A tensor split across ranks (program.proto, message Sharding): tensor parallelism cuts it
// into equal blocks along one dimension (the rank's block is at its coordinate on the block's
// mesh axis), then ZeRO flattens the block and cuts it into flat shards padded with zeros (the
// rank's shard is at its coordinate on the shard's mesh axis, its rank without a mesh).
// A dimension the blocks do not divide is padded first (Sharding.padded_dim_size): the last
// blocks end in zero rows that belong to no element of the whole tensor.
//
// The arithmetic of that split, shared by the compiler (which stores each block's initial
// value) and the runtime (which slices and gathers the parts: runtime/training/shard_transfer.h;
// checkSharding in runtime/loader/sharding_validation.h checks a Sharding first).
#pragma once

#include "runtime/program/program.pb.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardc::runtime {

std::vector<int64_t> globalShapeOf(const program::Sharding &sharding);
int64_t globalNumelOf(const program::Sharding &sharding);
// The shape of one tensor-parallel block (the global shape when there are no blocks).
std::vector<int64_t> blockShapeOf(const program::Sharding &sharding);
bool hasBlocks(const program::Sharding &sharding);
// Elements of one block (of the whole tensor when there are no blocks).
int64_t blockNumelOf(const program::Sharding &sharding);

// Copies block `index` of the whole tensor `whole` (global_shape, row-major, elements of
// `elementBytes` bytes) into `block` (the block's elements, row-major); the whole tensor when
// the sharding has no blocks. A block along a dimension other than the first is not contiguous
// in the whole: it is `outer` runs of `inner` elements, run o at (o * num_blocks + index) *
// inner (with block_groups g, each group of the dimension gives a run: g times the runs, each
// 1/g as long).
// Rows of a padded block past the whole's end are zero-filled.
void copyBlock(const program::Sharding &sharding, int64_t index, const void *whole, void *block,
               size_t elementBytes);

// Copies `block` (block `index`'s elements, row-major) into its place in `whole`: copyBlock's
// inverse (a padded block's padding is dropped).
void placeBlock(const program::Sharding &sharding, int64_t index, const void *block, void *whole,
                size_t elementBytes);

// Where this rank's part lies: its block and its flat shard of that block.
struct ShardPlace {
  int block = 0;
  int shard = 0;
};
// From `program`'s mesh coordinate (its rank on the shard axis when it has no mesh); call on a
// program whose sharding checkSharding accepted.
ShardPlace shardPlaceOf(const program::Program &program, const program::Sharding &sharding);

} // namespace shardc::runtime
