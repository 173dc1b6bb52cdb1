#include "runtime/training/sharded_tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace shardc::runtime {

const program::Binding *
findBinding(const google::protobuf::RepeatedPtrField<program::Binding> &bindings,
            const std::string &name) {
  for (const program::Binding &binding : bindings)
    if (binding.name() == name)
      return &binding;
  return nullptr;
}

std::vector<int64_t> globalShapeOf(const program::Sharding &sharding) {
  return std::vector<int64_t>(sharding.global_shape().begin(), sharding.global_shape().end());
}

int64_t globalNumelOf(const program::Sharding &sharding) {
  int64_t numel = 1;
  for (int64_t dim : sharding.global_shape())
    numel *= dim;
  return numel;
}

Status checkSharding(const program::Sharding &sharding, const program::Buffer &buffer,
                     int worldSize) {
  std::string global = describeTensorType(buffer.dtype(), sharding.global_shape());
  if (buffer.dtype() != program::F32)
    return Status::error("sharded tensor " + global + " is not f32 (only f32 tensors are sharded)");
  if (sharding.num_shards() != worldSize)
    return Status::error("split into " + std::to_string(sharding.num_shards()) +
                         " shards, but the program runs on " + std::to_string(worldSize) +
                         " ranks");
  // numel * num_shards must not overflow, whatever a corrupt program says.
  const int64_t limit = std::numeric_limits<int64_t>::max() / 8;
  int64_t numel = 1;
  for (int64_t dim : sharding.global_shape()) {
    if (dim < 0 || (dim != 0 && numel > limit / dim))
      return Status::error("invalid global shape " + global);
    numel *= dim;
  }
  if (sharding.shard_numel() < 0 || sharding.shard_numel() > limit / std::max(worldSize, 1) ||
      sharding.shard_numel() * worldSize < numel)
    return Status::error(std::to_string(worldSize) + " shards of " +
                         std::to_string(sharding.shard_numel()) + " elements cannot hold " +
                         global);
  if (buffer.shape_size() != 1 || buffer.shape(0) != sharding.shard_numel())
    return Status::error(
        "a shard of " + global + " must be " +
        describeTensorType(program::F32, std::vector<int64_t>{sharding.shard_numel()}) +
        ", the buffer is " + describeTensorType(buffer.dtype(), buffer.shape()));
  return Status::ok();
}

Status sliceShard(const program::Sharding &sharding, int shardIndex, const HostTensor &full,
                  HostTensor *shard) {
  std::string expected = describeTensorType(program::F32, sharding.global_shape());
  if (full.describe() != expected)
    return Status::error("is " + full.describe() + ", expected " + expected);
  const int64_t shardNumel = sharding.shard_numel();
  reshapeHostTensor(program::F32, {shardNumel}, shard);
  const int64_t begin = std::min<int64_t>(int64_t(shardIndex) * shardNumel, full.numel());
  const int64_t end = std::min<int64_t>(begin + shardNumel, full.numel());
  float *dst = shard->as<float>();
  if (end > begin)
    std::memcpy(dst, full.as<float>() + begin, static_cast<size_t>(end - begin) * sizeof(float));
  std::fill(dst + (end - begin), dst + shardNumel, 0.0f); // the padding of the last shards
  return Status::ok();
}

Status gatherShards(Communicator *comm, const program::Sharding &sharding, const HostTensor &shard,
                    HostTensor *full) {
  const int64_t shardNumel = sharding.shard_numel();
  if (shard.dtype != program::F32 || shard.numel() != shardNumel)
    return Status::error("shard is " + shard.describe() + ", expected " +
                         describeTensorType(program::F32, std::vector<int64_t>{shardNumel}));
  const int shards = sharding.num_shards();
  if (comm == nullptr ? shards != 1 : comm->size() != shards)
    return Status::error("gathering " + std::to_string(shards) +
                         " shards needs a communicator of " + std::to_string(shards) + " ranks");
  // Every shard in rank order, padding included, then the padding cut off.
  std::vector<float> all(static_cast<size_t>(shardNumel) * static_cast<size_t>(shards));
  if (comm == nullptr) {
    std::memcpy(all.data(), shard.as<float>(), all.size() * sizeof(float));
  } else {
    SHARDC_RETURN_IF_ERROR(
        comm->allGather(shard.as<float>(), all.data(), static_cast<size_t>(shardNumel)));
  }
  const int64_t numel = globalNumelOf(sharding);
  *full = makeHostTensor(program::F32, globalShapeOf(sharding));
  if (numel > 0)
    std::memcpy(full->as<float>(), all.data(), static_cast<size_t>(numel) * sizeof(float));
  return Status::ok();
}

} // namespace shardc::runtime
