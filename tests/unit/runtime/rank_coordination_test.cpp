// The pieces that keep the ranks of a local world together: shards sliced from and gathered
// into full tensors, the threads that run the ranks and report the root cause of a failure, and
// the agreement that ends setup with one report of a setup error.
#include "runtime/comm/local/local_comm.h"
#include "runtime/loader/sharding_validation.h"
#include "runtime/training/rank_threads.h"
#include "runtime/training/setup_agreement.h"
#include "runtime/training/shard_transfer.h"
#include "tests/unit/runtime/test_util.h"

#include <atomic>
#include <chrono>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;

std::vector<std::unique_ptr<Communicator>> localWorld(int size, double timeoutSeconds = 30.0) {
  std::vector<std::unique_ptr<Communicator>> comms;
  CommOptions options;
  options.timeoutSeconds = timeoutSeconds;
  Status status = createLocalWorld(size, options, &comms);
  EXPECT_TRUE(status.isOk()) << status.message();
  return comms;
}

std::vector<Communicator *> pointers(const std::vector<std::unique_ptr<Communicator>> &comms) {
  std::vector<Communicator *> out;
  for (const auto &comm : comms)
    out.push_back(comm.get());
  return out;
}

program::Sharding shardingOf(std::vector<int64_t> shape, int shards) {
  program::Sharding sharding;
  int64_t numel = 1;
  for (int64_t d : shape) {
    sharding.add_global_shape(d);
    numel *= d;
  }
  sharding.set_num_shards(shards);
  sharding.set_shard_numel((numel + shards - 1) / shards);
  return sharding;
}

// f32[2x5] over 3 ranks: 4 elements each, the last shard 2 of them and 2 zeros; gathering the
// shards gives the tensor back, shape and all.
TEST(ShardedTensor, SliceAndGatherAreInverse) {
  const program::Sharding sharding = shardingOf({2, 5}, 3);
  std::vector<float> values(10);
  for (int i = 0; i < 10; ++i)
    values[i] = static_cast<float>(i + 1);
  const HostTensor full = testing::makeTensor(program::F32, {2, 5}, values);
  std::vector<HostTensor> shards(3);
  for (int r = 0; r < 3; ++r)
    ASSERT_TRUE(sliceShard(sharding, {0, r}, full, &shards[r]).isOk());
  EXPECT_EQ(shards[2].describe(), "f32[4]");
  EXPECT_EQ(std::vector<float>(shards[2].as<float>(), shards[2].as<float>() + 4),
            (std::vector<float>{9, 10, 0, 0}));

  auto comms = localWorld(3);
  std::vector<HostTensor> gathered(3);
  Status status = runRankThreads(pointers(comms), [&](int r) {
    return gatherShards(comms[r].get(), nullptr, sharding, shards[r], &gathered[r]);
  });
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(gathered[r].describe(), "f32[2x5]");
    EXPECT_EQ(gathered[r].bytes, full.bytes) << "rank " << r;
  }

  HostTensor wrong;
  status = sliceShard(sharding, {}, testing::makeTensor(program::F32, {10}, values), &wrong);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "is f32[10], expected f32[2x5]");
}

program::Program programOfRanks(int worldSize) {
  program::Program p;
  p.set_world_size(worldSize);
  return p;
}

TEST(ShardedTensor, ChecksTheShardingAgainstTheBuffer) {
  program::Buffer buffer;
  buffer.set_dtype(program::F32);
  buffer.add_shape(4);
  EXPECT_TRUE(checkSharding(shardingOf({2, 5}, 3), buffer, programOfRanks(3)).isOk());
  Status status = checkSharding(shardingOf({2, 5}, 3), buffer, programOfRanks(2));
  EXPECT_THAT(status.message(), HasSubstr("split into 3 shards, but 2 ranks share them"));
  program::Sharding small = shardingOf({2, 5}, 3);
  small.set_shard_numel(3);
  status = checkSharding(small, buffer, programOfRanks(3));
  EXPECT_THAT(status.message(), HasSubstr("3 shards of 3 elements cannot hold f32[2x5]"));
  buffer.set_shape(0, 5);
  status = checkSharding(shardingOf({2, 5}, 3), buffer, programOfRanks(3));
  EXPECT_THAT(status.message(),
              HasSubstr("a part of f32[2x5] must be f32[4], the buffer is f32[5]"));
}

// Tensor parallelism: blocks along a mesh axis the program has, of a dimension they divide.
TEST(ShardedTensor, ChecksBlocksAgainstTheMesh) {
  program::Program p = programOfRanks(4);
  p.set_rank(1);
  testing::addMesh2x2(&p);
  program::Sharding blocks = shardingOf({2, 6}, 1);
  blocks.set_shard_numel(6);
  blocks.set_num_blocks(2);
  blocks.set_block_dim(1);
  blocks.set_block_axis(1);
  program::Buffer buffer;
  buffer.set_dtype(program::F32);
  buffer.add_shape(2);
  buffer.add_shape(3);
  EXPECT_TRUE(checkSharding(blocks, buffer, p).isOk());
  EXPECT_EQ(shardPlaceOf(p, blocks).block, 1);
  blocks.set_block_axis(2);
  EXPECT_THAT(checkSharding(blocks, buffer, p).message(),
              HasSubstr("blocks along mesh axis 2, which the program's mesh does not have"));
  blocks.set_block_axis(1);
  blocks.set_num_blocks(3);
  EXPECT_THAT(checkSharding(blocks, buffer, p).message(),
              HasSubstr("split into 3 blocks along mesh axis 'tp' of 2 ranks"));
  blocks.set_num_blocks(2);
  blocks.set_global_shape(1, 5);
  EXPECT_THAT(checkSharding(blocks, buffer, p).message(),
              HasSubstr("dim 1 of f32[2x5] cannot be cut into 2 equal blocks"));
}

// f32[2x6] holding 1, 2, ..., 12 in row-major order.
HostTensor oneToTwelve2x6() {
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i)
    values[i] = static_cast<float>(i + 1);
  return testing::makeTensor(program::F32, {2, 6}, values);
}

// f32[2x6] cut into 2 blocks along dim 1 on mesh axis 1 (tp), in `shards` flat shards each.
program::Sharding columnBlocksOf2x6(int shards) {
  program::Sharding sharding = shardingOf({2, 6}, shards);
  sharding.set_num_blocks(2);
  sharding.set_block_dim(1);
  sharding.set_block_axis(1);
  return sharding;
}

// Each rank's part of `full` on a 2 x 2 dp x tp world (rank r at dp r / 2, tp r % 2), sliced
// where its coordinate says; `programs` gets each rank's program.
std::vector<HostTensor> sliceOnMesh2x2(const program::Sharding &sharding, const HostTensor &full,
                                       std::vector<program::Program> &programs) {
  std::vector<HostTensor> parts(4);
  programs.assign(4, program::Program());
  for (int r = 0; r < 4; ++r) {
    programs[r] = programOfRanks(4);
    programs[r].set_rank(r);
    testing::addMesh2x2(&programs[r]);
    Status status = sliceShard(sharding, shardPlaceOf(programs[r], sharding), full, &parts[r]);
    EXPECT_TRUE(status.isOk()) << status.message();
  }
  return parts;
}

// The whole tensors the 4 ranks gather from their `parts`: over the dp group, then the tp group.
std::vector<HostTensor> gatherOnMesh2x2(const program::Sharding &sharding,
                                        const std::vector<HostTensor> &parts) {
  auto comms = localWorld(4);
  std::vector<std::unique_ptr<Communicator>> dpGroups(4), tpGroups(4);
  std::vector<HostTensor> gathered(4);
  Status status = runRankThreads(pointers(comms), [&](int r) -> Status {
    SHARDC_RETURN_IF_ERROR(comms[r]->split(r % 2, r / 2, &dpGroups[r]));
    SHARDC_RETURN_IF_ERROR(comms[r]->split(r / 2, r % 2, &tpGroups[r]));
    return gatherShards(dpGroups[r].get(), tpGroups[r].get(), sharding, parts[r], &gathered[r]);
  });
  EXPECT_TRUE(status.isOk()) << status.message();
  return gathered;
}

// A 2 x 2 dp x tp world: f32[2x6] cut into two column blocks of 2x3 on tp, each block into
// two flat shards of 3 on dp (ZeRO over dp of what tp split). Slicing puts each rank's part
// where its coordinate says; gathering over the dp group, then the tp group, gives the
// tensor back on every rank.
TEST(ShardedTensor, SliceAndGatherBlocksOfShardsOnAMesh) {
  program::Sharding sharding = columnBlocksOf2x6(/*shards=*/2);
  sharding.set_shard_numel(3);
  sharding.set_shard_axis(0);
  const HostTensor full = oneToTwelve2x6();
  std::vector<program::Program> programs;
  std::vector<HostTensor> parts = sliceOnMesh2x2(sharding, full, programs);
  // Rank 1 (dp 0, tp 1): block [[4, 5, 6], [10, 11, 12]], its first shard.
  EXPECT_EQ(std::vector<float>(parts[1].as<float>(), parts[1].as<float>() + 3),
            (std::vector<float>{4, 5, 6}));
  // Rank 2 (dp 1, tp 0): block [[1, 2, 3], [7, 8, 9]], its second shard.
  EXPECT_EQ(std::vector<float>(parts[2].as<float>(), parts[2].as<float>() + 3),
            (std::vector<float>{7, 8, 9}));

  std::vector<HostTensor> gathered = gatherOnMesh2x2(sharding, parts);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(gathered[r].describe(), "f32[2x6]");
    EXPECT_EQ(gathered[r].bytes, full.bytes) << "rank " << r;
  }
}

// A strided split (a fused QKV weight): f32[2x6] whose dim 1 is 3 groups of 2 columns, each
// group cut on tp: the rank at tp coordinate b holds column b of every group, in group order.
// Slicing and gathering over the tp group give the tensor back; a dimension the groups and
// blocks do not divide is refused.
TEST(ShardedTensor, SliceAndGatherAStridedSplit) {
  program::Sharding sharding = columnBlocksOf2x6(/*shards=*/1);
  sharding.set_shard_numel(6);
  sharding.set_block_groups(3);
  const HostTensor full = oneToTwelve2x6(); // rows [1..6], [7..12]
  std::vector<program::Program> programs;
  std::vector<HostTensor> parts = sliceOnMesh2x2(sharding, full, programs);
  // tp 0: columns 0, 2, 4; tp 1: columns 1, 3, 5.
  EXPECT_EQ(std::vector<float>(parts[0].as<float>(), parts[0].as<float>() + 6),
            (std::vector<float>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(std::vector<float>(parts[1].as<float>(), parts[1].as<float>() + 6),
            (std::vector<float>{2, 4, 6, 8, 10, 12}));

  std::vector<HostTensor> gathered = gatherOnMesh2x2(sharding, parts);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(gathered[r].bytes, full.bytes) << "rank " << r;

  program::Buffer buffer;
  buffer.set_dtype(program::F32);
  buffer.add_shape(2);
  buffer.add_shape(3);
  EXPECT_TRUE(checkSharding(sharding, buffer, programs[1]).isOk());
  sharding.set_block_groups(2);
  EXPECT_THAT(checkSharding(sharding, buffer, programs[1]).message(),
              HasSubstr("dim 1 of f32[2x6] cannot be cut into 2 groups of 2 equal blocks"));
}

// A padded split (a vocabulary tensor parallelism does not divide): f32[2x5] whose dim 1 is
// padded to 6 and cut on tp into blocks of 3 columns, each block in two flat shards of 3 on
// dp. The last block ends in a zero column; gathering drops it and gives f32[2x5] back. A
// padding that is no multiple of the blocks, or a block or more of it, is refused.
TEST(ShardedTensor, SliceAndGatherAPaddedSplit) {
  program::Sharding sharding = columnBlocksOf2x6(/*shards=*/2);
  sharding.set_global_shape(1, 5);
  sharding.set_padded_dim_size(6);
  sharding.set_shard_numel(3);
  sharding.set_shard_axis(0);
  std::vector<float> values(10);
  for (int i = 0; i < 10; ++i)
    values[i] = static_cast<float>(i + 1);
  const HostTensor full = testing::makeTensor(program::F32, {2, 5}, values); // [1..5], [6..10]
  std::vector<program::Program> programs;
  std::vector<HostTensor> parts = sliceOnMesh2x2(sharding, full, programs);
  // tp 1's block is [[4, 5, 0], [9, 10, 0]]: rank 1 (dp 0) its first row, rank 3 its second.
  EXPECT_EQ(std::vector<float>(parts[1].as<float>(), parts[1].as<float>() + 3),
            (std::vector<float>{4, 5, 0}));
  EXPECT_EQ(std::vector<float>(parts[3].as<float>(), parts[3].as<float>() + 3),
            (std::vector<float>{9, 10, 0}));
  EXPECT_EQ(std::vector<float>(parts[2].as<float>(), parts[2].as<float>() + 3),
            (std::vector<float>{6, 7, 8}));
  std::vector<HostTensor> gathered = gatherOnMesh2x2(sharding, parts);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(gathered[r].describe(), "f32[2x5]");
    EXPECT_EQ(gathered[r].bytes, full.bytes) << "rank " << r;
  }

  program::Buffer buffer;
  buffer.set_dtype(program::F32);
  buffer.add_shape(3);
  EXPECT_TRUE(checkSharding(sharding, buffer, programs[1]).isOk());
  sharding.set_padded_dim_size(7);
  EXPECT_THAT(checkSharding(sharding, buffer, programs[1]).message(),
              HasSubstr("dim 1 of f32[2x5] cannot be padded to 7 for 2 equal blocks"));
  sharding.set_global_shape(1, 2);
  sharding.set_padded_dim_size(6); // blocks of 3, the second all padding
  EXPECT_THAT(checkSharding(sharding, buffer, programs[1]).message(),
              HasSubstr("cannot be padded to 6"));
}

// Rank 2 fails while ranks 0 and 1 wait for it in a collective: the abort frees them at once,
// and the error reported is rank 2's own, not theirs ("rank 2 failed: ...").
TEST(RankThreads, TheFirstFailureIsTheRootCause) {
  auto comms = localWorld(3);
  std::vector<std::string> seen(3);
  Status status = runRankThreads(pointers(comms), [&](int r) -> Status {
    if (r == 2)
      return Status::error("disk full");
    float value = 1.0f;
    Status result = comms[r]->allReduceSum(&value, 1);
    seen[r] = result.message();
    return result;
  });
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "rank 2: disk full");
  EXPECT_THAT(seen[0], HasSubstr("rank 2 failed: disk full"));
  EXPECT_THAT(seen[1], HasSubstr("rank 2 failed: disk full"));
}

TEST(RankThreads, ExceptionsFailTheRank) {
  auto comms = localWorld(2);
  Status status = runRankThreads(pointers(comms), [&](int r) -> Status {
    if (r == 0)
      throw std::runtime_error("boom");
    return Status::ok();
  });
  EXPECT_EQ(status.message(), "rank 0: internal error: boom");
  std::atomic<int> ran{0};
  status = runRankThreads(pointers(comms), [&](int) {
    ++ran;
    return Status::ok();
  });
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(ran.load(), 2);
}

// Ranks 1 and 2 fail their setup the same way: only rank 1, the lowest, reports it; the others
// stop quietly, rank 0 included.
TEST(SetupAgreement, OnlyTheLowestFailingRankReports) {
  auto comms = localWorld(3);
  std::vector<int> stopped(3, -1);
  Status status = runRankThreads(pointers(comms), [&](int r) -> Status {
    Status setup = r == 0 ? Status::ok() : Status::error("x.npy: no such file");
    bool stop = false;
    Status agreed = agreeOnSetup(comms[r].get(), setup, 30.0, &stop);
    stopped[r] = stop;
    return agreed;
  });
  EXPECT_EQ(status.message(), "rank 1: x.npy: no such file");
  EXPECT_EQ(stopped, (std::vector<int>{1, 1, 1}));

  auto fresh = localWorld(3); // rank 1's report aborted the first world
  status = runRankThreads(pointers(fresh), [&](int r) -> Status {
    bool stop = true;
    Status agreed = agreeOnSetup(fresh[r].get(), Status::ok(), 30.0, &stop);
    stopped[r] = stop;
    return agreed;
  });
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(stopped, (std::vector<int>{0, 0, 0}));
}

// A rank slower to set up than the communicator's timeout allows (0.2 s) still joins: the
// agreement waits up to its own timeout (2 s), and afterwards the collectives are back to
// 0.2 s.
TEST(SetupAgreement, WaitsForASlowRankUnderItsOwnTimeout) {
  auto comms = localWorld(2, 0.2);
  Status status = runRankThreads(pointers(comms), [&](int r) -> Status {
    if (r == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
    bool stop = true;
    SHARDC_RETURN_IF_ERROR(agreeOnSetup(comms[r].get(), Status::ok(), 2.0, &stop));
    EXPECT_FALSE(stop);
    EXPECT_EQ(comms[r]->timeoutSeconds(), 0.2);
    return Status::ok();
  });
  EXPECT_TRUE(status.isOk()) << status.message();

  // The same stall in an ordinary collective ends it after 0.2 s.
  auto world = localWorld(2, 0.2);
  status = runRankThreads(pointers(world), [&](int r) -> Status {
    if (r == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
    float value = 1.0f;
    return world[r]->allReduceSum(&value, 1);
  });
  EXPECT_THAT(status.message(), HasSubstr("timed out after 0.2 s waiting for rank 1"));
}

// Rank 0 writes a checkpoint for longer than the communicator's timeout: the others wait for it
// in waitForRanks; a rank that never comes makes it fail, naming what they waited for.
TEST(WaitForRanks, CoversLongWorkOfOneRank) {
  auto comms = localWorld(3, 0.2);
  Status status = runRankThreads(pointers(comms), [&](int r) -> Status {
    if (r == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
    return waitForRanks(comms[r].get(), 2.0, "while rank 0 writes the checkpoint");
  });
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(waitForRanks(nullptr, 1.0, "nothing").isOk());

  auto world = localWorld(2, 0.2);
  status = runRankThreads(pointers(world), [&](int r) -> Status {
    if (r == 0)
      return Status::ok(); // never joins
    return waitForRanks(world[r].get(), 0.5, "while rank 0 writes the checkpoint");
  });
  EXPECT_EQ(status.message(), "rank 1: all_gather #1: timed out after 0.5 s waiting for rank 0 "
                              "(while rank 0 writes the checkpoint)");
}

TEST(CommTimeoutScope, RaisesAndRestores) {
  auto comms = localWorld(1, 0.2);
  Communicator *comm = comms[0].get();
  {
    CommTimeoutScope longer(comm, 5.0);
    EXPECT_EQ(comm->timeoutSeconds(), 5.0);
    CommTimeoutScope shorter(comm, 1.0); // never lowers it
    EXPECT_EQ(comm->timeoutSeconds(), 5.0);
  }
  EXPECT_EQ(comm->timeoutSeconds(), 0.2);
  EXPECT_FALSE(comm->setTimeoutSeconds(0).isOk());
  EXPECT_FALSE(comm->setTimeoutSeconds(std::numeric_limits<double>::infinity()).isOk());
  EXPECT_EQ(comm->timeoutSeconds(), 0.2);
}

} // namespace
} // namespace shardc::runtime
