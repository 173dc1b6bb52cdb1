// A tensor split across ranks (program.proto, message Sharding): tensor parallelism cuts it
// into equal blocks along one dimension (the rank's block is at its coordinate on the block's
// mesh axis), then ZeRO flattens the block and cuts it into flat shards padded with zeros (the
// rank's shard is at its coordinate on the shard's mesh axis, its rank without a mesh).
//
// Checkpoints, --outputs and --export-onnx always deal in full tensors, so that a checkpoint
// does not depend on how many ranks wrote it or how they split it: restoring slices a full
// tensor into this rank's part, saving gathers every rank's part back into the full tensor.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/program/bindings.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

std::vector<int64_t> globalShapeOf(const program::Sharding &sharding);
int64_t globalNumelOf(const program::Sharding &sharding);
// The shape of one tensor-parallel block (the global shape when there are no blocks).
std::vector<int64_t> blockShapeOf(const program::Sharding &sharding);
bool hasBlocks(const program::Sharding &sharding);

// Copies block `index` of the whole tensor `whole` (global_shape, row-major, elements of
// `elementBytes` bytes) into `block` (the block's elements, row-major); the whole tensor when
// the sharding has no blocks. A block along a dimension other than the first is not contiguous
// in the whole: it is `outer` runs of `inner` elements, run o at (o * num_blocks + index) *
// inner (with block_groups g, each group of the dimension gives a run: g times the runs, each
// 1/g as long).
void copyBlock(const program::Sharding &sharding, int64_t index, const void *whole, void *block,
               size_t elementBytes);

// Where this rank's part lies: its block and its flat shard of that block.
struct ShardPlace {
  int block = 0;
  int shard = 0;
};
// From `program`'s mesh coordinate (its rank on the shard axis when it has no mesh); call on a
// program whose sharding checkSharding accepted.
ShardPlace shardPlaceOf(const program::Program &program, const program::Sharding &sharding);

// Checks that `sharding` describes `buffer` as this rank's part of a tensor in `program`: f32
// (parts travel through the float collectives), blocks along a dimension and mesh axis that
// exist and divide evenly, one flat shard per rank of the shard axis, shards that together
// cover the block, and a buffer of the block's shape or [shard_numel]. Messages start with what
// is wrong; the caller names the binding.
Status checkSharding(const program::Sharding &sharding, const program::Buffer &buffer,
                     const program::Program &program);

// Copies this rank's part (`place`) of `full` (dtype f32, shape global_shape) into `part`,
// reusing its storage and keeping its shape when it holds shard_numel elements (else it
// becomes [shard_numel]); zeros past the end of the block.
Status sliceShard(const program::Sharding &sharding, ShardPlace place, const HostTensor &full,
                  HostTensor *part);

// The full tensor from every rank's `part`: a collective that every rank of `shardComm` (the
// ranks holding the shards of one block, in shard order) and then of `blockComm` (the ranks
// holding the blocks, in block order) must call with its part of the same tensor, in the same
// order. Each rank receives the full tensor (padding dropped, shape global_shape) in `full`.
// A communicator is not used where there is one shard or one block (it may be null).
Status gatherShards(Communicator *shardComm, Communicator *blockComm,
                    const program::Sharding &sharding, const HostTensor &part, HostTensor *full);

} // namespace shardc::runtime
