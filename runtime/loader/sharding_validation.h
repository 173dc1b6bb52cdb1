// The checks of a binding's Sharding (program.proto; the arithmetic is
// runtime/common/sharded_tensor.h) against the program it belongs to, before any part of a
// tensor is sliced or gathered by it.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

namespace shardc::runtime {

// Checks that `sharding` describes `buffer` as this rank's part of a tensor in `program`: f32
// (parts travel through the float collectives), blocks along a dimension and mesh axis that
// exist and divide evenly, one flat shard per rank of the shard axis, shards that together
// cover the block, and a buffer of the block's shape or [shard_numel]. Messages start with what
// is wrong; the caller names the binding.
Status checkSharding(const program::Sharding &sharding, const program::Buffer &buffer,
                     const program::Program &program);

} // namespace shardc::runtime
