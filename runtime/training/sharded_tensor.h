// A tensor split across the data-parallel ranks (ZeRO; program.proto, message Sharding): rank r
// holds the row-major elements [r * shard_numel, (r + 1) * shard_numel) of the full tensor,
// zeros past its end, in a buffer of shape [shard_numel].
//
// Checkpoints, --outputs and --export-onnx always deal in full tensors, so that a checkpoint
// does not depend on how many ranks wrote it: restoring slices a full tensor into this rank's
// shard, saving gathers every rank's shard back into the full tensor.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/executor/host_tensor.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

// The binding named `name` in `bindings`, or null.
const program::Binding *
findBinding(const google::protobuf::RepeatedPtrField<program::Binding> &bindings,
            const std::string &name);

std::vector<int64_t> globalShapeOf(const program::Sharding &sharding);
int64_t globalNumelOf(const program::Sharding &sharding);

// Checks that `sharding` describes `buffer` as one of `worldSize` shards: f32 (shards travel
// through the float collectives), one shard per rank, shape [shard_numel], and shards that
// together cover the full tensor. Messages start with what is wrong; the caller names the
// binding.
Status checkSharding(const program::Sharding &sharding, const program::Buffer &buffer,
                     int worldSize);

// Copies shard `shardIndex` of `full` (dtype f32, shape global_shape) into `shard`, reusing its
// storage: shape [shard_numel], zeros past the end of the full tensor.
Status sliceShard(const program::Sharding &sharding, int shardIndex, const HostTensor &full,
                  HostTensor *shard);

// The full tensor from every rank's `shard`: a collective (comm->allGather) that every rank of
// `comm` must call with its shard of the same tensor, in the same order. Each rank receives the
// full tensor (padding dropped, shape global_shape) in `full`. With one shard, `comm` may be
// null.
Status gatherShards(Communicator *comm, const program::Sharding &sharding, const HostTensor &shard,
                    HostTensor *full);

} // namespace shardc::runtime
