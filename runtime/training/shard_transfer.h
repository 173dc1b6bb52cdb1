// Moving the parts of a sharded tensor (runtime/common/sharded_tensor.h) between a full host
// tensor and the ranks that hold them. Checkpoints, --outputs and --export-onnx always deal in
// full tensors, so that a checkpoint does not depend on how many ranks wrote it or how they
// split it: restoring slices a full tensor into this rank's part, saving gathers every rank's
// part back into the full tensor.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/common/sharded_tensor.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

namespace shardc::runtime {

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
