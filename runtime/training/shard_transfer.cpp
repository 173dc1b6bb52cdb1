#include "runtime/training/shard_transfer.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace shardc::runtime {

Status sliceShard(const program::Sharding &sharding, ShardPlace place, const HostTensor &full,
                  HostTensor *part) {
  std::string expected = describeTensorType(program::F32, sharding.global_shape());
  if (full.describe() != expected)
    return Status::error("is " + full.describe() + ", expected " + expected);
  std::vector<float> blockValues;
  const float *blockData = full.as<float>();
  int64_t blockNumel = full.numel();
  if (hasBlocks(sharding)) {
    blockNumel = blockNumelOf(sharding);
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
  const std::vector<int64_t> global = globalShapeOf(sharding);
  const int64_t blockNumel = blockNumelOf(sharding);
  *full = makeHostTensor(program::F32, global);
  if (!hasBlocks(sharding)) {
    if (blockNumel > 0)
      std::memcpy(full->as<float>(), shards.data(), static_cast<size_t>(blockNumel) * sizeof(float));
    return Status::ok();
  }
  std::vector<float> blocks;
  SHARDC_RETURN_IF_ERROR(gatherAll(blockComm, sharding.num_blocks(), shards.data(),
                                   static_cast<size_t>(blockNumel), &blocks));
  // Block b's runs interleave into the full tensor along block_dim.
  for (int64_t b = 0; b < sharding.num_blocks(); ++b)
    placeBlock(sharding, b, blocks.data() + b * blockNumel, full->as<float>(), sizeof(float));
  return Status::ok();
}

} // namespace shardc::runtime
