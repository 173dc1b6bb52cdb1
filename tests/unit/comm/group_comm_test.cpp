// Groups split from a local world (Communicator::split, runtime/common/mesh.h): each group's
// collectives sum over its members only, bit for bit as a world of the group's size would, and
// leave the other ranks alone; every group counts its own bytes; errors name world ranks and the
// group; an abort anywhere reaches every communicator of the family.
#include "runtime/common/comm_cost.h"
#include "runtime/common/mesh.h"
#include "tests/unit/comm/comm_test_util.h"

#include <algorithm>
#include <map>
#include <string>

namespace shardc::runtime::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string &text, const std::string &fragment) {
  return text.find(fragment) != std::string::npos;
}

// Every rank of `comms` splits with (colors[r], keys[r]); returns each rank's group (null for
// a negative color), failing the test on an error.
std::vector<std::unique_ptr<Communicator>>
splitAll(const std::vector<std::unique_ptr<Communicator>> &comms, const std::vector<int> &colors,
         const std::vector<int> &keys) {
  std::vector<std::unique_ptr<Communicator>> groups(comms.size());
  for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
         return comm.split(colors[static_cast<size_t>(r)], keys[static_cast<size_t>(r)],
                           &groups[static_cast<size_t>(r)]);
       }))
    EXPECT_TRUE(s.isOk()) << s.message();
  return groups;
}

// The groups of every rank of a local world laid out on the mesh `sizes`, along `axes`.
std::vector<std::unique_ptr<Communicator>>
meshGroups(const std::vector<std::unique_ptr<Communicator>> &comms,
           const std::vector<int64_t> &sizes, const std::vector<int> &axes) {
  std::vector<int> colors, keys;
  for (size_t r = 0; r < comms.size(); ++r) {
    const MeshSlice slice = meshSlice(sizes, meshCoordinate(sizes, static_cast<int>(r)), axes);
    colors.push_back(slice.color);
    keys.push_back(slice.key);
  }
  return splitAll(comms, colors, keys);
}

std::vector<int> membersOf(const Communicator &comm) {
  std::vector<int> members;
  for (int r = 0; r < comm.size(); ++r)
    members.push_back(comm.worldRankOf(r));
  return members;
}

// What the collectives of a world of `members.size()` ranks give when rank i holds the data
// of world rank members[i]: the reference a group must match bit for bit.
struct Reference {
  std::vector<std::vector<float>> allReduced, scattered, gathered;
  std::vector<CommCounters> counters;
};

Reference referenceRun(const std::vector<int> &members, size_t count, size_t chunk, unsigned salt) {
  const int n = static_cast<int>(members.size());
  auto world = makeLocalWorld(n);
  Reference ref;
  ref.allReduced.resize(members.size());
  ref.scattered.resize(members.size());
  ref.gathered.resize(members.size());
  for (const Status &s : runRanks(world, [&](int i, Communicator &comm) -> Status {
         const int member = members[static_cast<size_t>(i)];
         std::vector<float> data = rankData(member, count, salt);
         SHARDC_RETURN_IF_ERROR(comm.allReduceSum(data.data(), count));
         ref.allReduced[static_cast<size_t>(i)] = data;
         const std::vector<float> in = rankData(member, chunk * static_cast<size_t>(n), salt + 1);
         std::vector<float> out(chunk);
         SHARDC_RETURN_IF_ERROR(comm.reduceScatterSum(in.data(), out.data(), chunk));
         ref.scattered[static_cast<size_t>(i)] = out;
         const std::vector<float> shard = rankData(member, chunk, salt + 2);
         std::vector<float> all(chunk * static_cast<size_t>(n));
         SHARDC_RETURN_IF_ERROR(comm.allGather(shard.data(), all.data(), chunk));
         ref.gathered[static_cast<size_t>(i)] = all;
         return Status::ok();
       }))
    EXPECT_TRUE(s.isOk()) << s.message();
  for (const auto &comm : world)
    ref.counters.push_back(comm->counters());
  return ref;
}

// Every group of `groups` (one per world rank) runs an all-reduce, a reduce-scatter and an
// all-gather, all groups at once; each rank's results and counters must be its group's
// reference run's, and the world communicators must have sent nothing.
void checkGroupCollectives(const std::vector<std::unique_ptr<Communicator>> &world,
                           const std::vector<std::unique_ptr<Communicator>> &groups) {
  const size_t count = 1001, chunk = 37;
  const unsigned salt = 5;
  std::vector<std::vector<float>> allReduced(world.size()), scattered(world.size()),
      gathered(world.size());
  for (const Status &s : runRanks(world, [&](int r, Communicator &) -> Status {
         Communicator &group = *groups[static_cast<size_t>(r)];
         const size_t n = static_cast<size_t>(group.size());
         std::vector<float> data = rankData(r, count, salt);
         SHARDC_RETURN_IF_ERROR(group.allReduceSum(data.data(), count));
         allReduced[static_cast<size_t>(r)] = data;
         const std::vector<float> in = rankData(r, chunk * n, salt + 1);
         std::vector<float> out(chunk);
         SHARDC_RETURN_IF_ERROR(group.reduceScatterSum(in.data(), out.data(), chunk));
         scattered[static_cast<size_t>(r)] = out;
         const std::vector<float> shard = rankData(r, chunk, salt + 2);
         std::vector<float> all(chunk * n);
         SHARDC_RETURN_IF_ERROR(group.allGather(shard.data(), all.data(), chunk));
         gathered[static_cast<size_t>(r)] = all;
         return Status::ok();
       }))
    ASSERT_TRUE(s.isOk()) << s.message();

  std::map<std::vector<int>, Reference> references;
  for (size_t r = 0; r < world.size(); ++r) {
    const Communicator &group = *groups[r];
    const std::vector<int> members = membersOf(group);
    SCOPED_TRACE("rank " + std::to_string(r) + " of group " + ::testing::PrintToString(members));
    if (references.count(members) == 0)
      references[members] = referenceRun(members, count, chunk, salt);
    const Reference &ref = references[members];
    const size_t i = static_cast<size_t>(group.rank());
    EXPECT_TRUE(sameBits(allReduced[r], ref.allReduced[i])) << "all_reduce";
    EXPECT_TRUE(sameBits(scattered[r], ref.scattered[i])) << "reduce_scatter";
    EXPECT_TRUE(sameBits(gathered[r], ref.gathered[i])) << "all_gather";
    for (int k = 0; k < kCollectiveKinds; ++k) {
      EXPECT_EQ(group.counters().calls[k], ref.counters[i].calls[k]) << k;
      EXPECT_EQ(group.counters().bytesSent[k], ref.counters[i].bytesSent[k]) << k;
    }
    EXPECT_EQ(world[r]->counters().totalBytesSent(), 0u) << "the world sent the group's bytes";
    for (int k = 0; k < kCollectiveKinds; ++k)
      EXPECT_EQ(world[r]->counters().calls[k], 0u);
  }
}

TEST(Mesh, RanksAreRowMajorAndSlicesListTheirGroupInOrder) {
  const std::vector<int64_t> sizes = {2, 3}; // dp x tp
  EXPECT_EQ(meshRank(sizes, {0, 0}), 0);
  EXPECT_EQ(meshRank(sizes, {1, 2}), 5);
  EXPECT_EQ(meshCoordinate(sizes, 4), (std::vector<int64_t>{1, 1}));
  // Rank 4 = (1, 1): its tp slice is row 1, its dp slice column 1.
  MeshSlice tp = meshSlice(sizes, {1, 1}, {1});
  EXPECT_EQ(tp.ranks, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(tp.color, 1);
  EXPECT_EQ(tp.key, 1);
  MeshSlice dp = meshSlice(sizes, {1, 1}, {0});
  EXPECT_EQ(dp.ranks, (std::vector<int>{1, 4}));
  EXPECT_EQ(dp.color, 1);
  EXPECT_EQ(dp.key, 1);
  MeshSlice all = meshSlice(sizes, {1, 1}, {0, 1});
  EXPECT_EQ(all.ranks, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(all.color, 0);
  EXPECT_EQ(all.key, 4);
  // Three axes: the slice along the first and last through (1, 0, 1) of 2 x 2 x 2.
  MeshSlice outer = meshSlice({2, 2, 2}, {1, 0, 1}, {0, 2});
  EXPECT_EQ(outer.ranks, (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(outer.key, 3);
  EXPECT_EQ(outer.color, 0);
}

// A launcher keeps tp groups on consecutive ranks: on dp x tp x pp = 2 x 2 x 2 (mesh rank
// (d*2 + t)*2 + p) it numbers (d, p, t) row-major, so launcher ranks 0, 1 are mesh ranks 0 and
// 2 (t = 0, 1 of stage 0), and every pair {2k, 2k+1} is one tp group of the mesh.
TEST(Mesh, ALauncherKeepsTheInnermostAxisOnConsecutiveRanks) {
  const std::vector<int64_t> sizes = {2, 2, 2};
  std::vector<int64_t> mesh;
  for (int64_t r = 0; r < 8; ++r)
    mesh.push_back(meshRankOfLaunchRank(sizes, 1, r));
  EXPECT_EQ(mesh, (std::vector<int64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  for (int64_t k = 0; k < 4; ++k) {
    MeshSlice tp = meshSlice(sizes, meshCoordinate(sizes, mesh[2 * k]), {1});
    EXPECT_EQ(tp.ranks, (std::vector<int>{static_cast<int>(mesh[2 * k]),
                                           static_cast<int>(mesh[2 * k + 1])}));
  }
  // Already innermost, or no such axis: the mesh's numbering.
  EXPECT_EQ(meshRankOfLaunchRank({2, 4}, 1, 5), 5);
  EXPECT_EQ(meshRankOfLaunchRank({2, 4}, -1, 5), 5);
}

// The brief's example: 4 ranks on dp x tp = 2 x 2, rank = dp*2 + tp. Rank 1's tp group is
// {0, 1}, its dp group {1, 3}; each group's sums are its members' only.
TEST(GroupComm, FourRanksSplitIntoTwoByTwoGroups) {
  auto world = makeLocalWorld(4);
  auto tp = meshGroups(world, {2, 2}, {1});
  auto dp = meshGroups(world, {2, 2}, {0});
  for (int r = 0; r < 4; ++r) {
    const Communicator &t = *tp[static_cast<size_t>(r)], &d = *dp[static_cast<size_t>(r)];
    EXPECT_TRUE(t.isGroup());
    EXPECT_FALSE(world[static_cast<size_t>(r)]->isGroup());
    EXPECT_STREQ(t.backendName(), "local");
    EXPECT_EQ(t.size(), 2);
    EXPECT_EQ(t.rank(), r % 2);
    EXPECT_EQ(t.worldRank(), r);
    EXPECT_EQ(membersOf(t), (std::vector<int>{r / 2 * 2, r / 2 * 2 + 1}));
    EXPECT_EQ(d.rank(), r / 2);
    EXPECT_EQ(membersOf(d), (std::vector<int>{r % 2, r % 2 + 2}));
  }
  EXPECT_EQ(tp[1]->groupSuffix(), " in group (ranks 0, 1)");
  dp[1]->setGroupName("dp");
  EXPECT_EQ(dp[1]->groupSuffix(), " in group 'dp' (ranks 1, 3)");

  // Small integers: every order of summation gives the exact sums.
  std::vector<std::vector<float>> tpSums(4), dpSums(4);
  for (const Status &s : runRanks(world, [&](int r, Communicator &) -> Status {
         std::vector<float> x = {float(r), float(10 * r), 1.0f};
         SHARDC_RETURN_IF_ERROR(tp[static_cast<size_t>(r)]->allReduceSum(x.data(), x.size()));
         tpSums[static_cast<size_t>(r)] = x;
         std::vector<float> y = {float(r), float(10 * r), 1.0f};
         SHARDC_RETURN_IF_ERROR(dp[static_cast<size_t>(r)]->allReduceSum(y.data(), y.size()));
         dpSums[static_cast<size_t>(r)] = y;
         return Status::ok();
       }))
    ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(tpSums[0], (std::vector<float>{1, 10, 2})); // ranks 0 + 1
  EXPECT_EQ(tpSums[1], tpSums[0]);
  EXPECT_EQ(tpSums[2], (std::vector<float>{5, 50, 2})); // ranks 2 + 3
  EXPECT_EQ(tpSums[3], tpSums[2]);
  EXPECT_EQ(dpSums[1], (std::vector<float>{4, 40, 2})); // ranks 1 + 3
  EXPECT_EQ(dpSums[3], dpSums[1]);
  EXPECT_EQ(dpSums[0], (std::vector<float>{2, 20, 2})); // ranks 0 + 2
  EXPECT_EQ(dpSums[2], dpSums[0]);

  // Random data, against the reference (fresh groups, whose counters start at zero).
  for (const std::vector<int> &axes : {std::vector<int>{1}, {0}}) {
    auto fresh = makeLocalWorld(4);
    checkGroupCollectives(fresh, meshGroups(fresh, {2, 2}, axes));
  }
}

// One group works while the other group's ranks do nothing at all: nothing waits for them, and
// their data are not touched.
TEST(GroupComm, AGroupLeavesTheOtherGroupUntouched) {
  auto world = makeLocalWorld(4, 5.0);
  auto tp = meshGroups(world, {2, 2}, {1});
  std::vector<std::vector<float>> data = {{1, 2}, {10, 20}, {100, 200}, {1000, 2000}};
  const auto untouched = data;
  const auto start = Clock::now();
  for (const Status &s : runRanks(world, [&](int r, Communicator &) -> Status {
         if (r >= 2) // the other group: no collective
           return Status::ok();
         auto &mine = data[static_cast<size_t>(r)];
         return tp[static_cast<size_t>(r)]->allReduceSum(mine.data(), mine.size());
       }))
    ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_LT(secondsSince(start), 2.0);
  EXPECT_EQ(data[0], (std::vector<float>{11, 22}));
  EXPECT_EQ(data[1], (std::vector<float>{11, 22}));
  EXPECT_EQ(data[2], untouched[2]);
  EXPECT_EQ(data[3], untouched[3]);
  EXPECT_EQ(tp[2]->counters().totalBytesSent(), 0u);
  EXPECT_EQ(tp[0]->counters().bytesSent[0],
            collectiveBytesSent(CollectiveKind::AllReduce, 2, 2, 4));
}

// Groups along each axis of 2 x 3 and 3 x 2 meshes (and along both), all groups of a split
// working at once, each bit-identical with a world of its size.
TEST(GroupComm, GroupsOfTwoByThreeAndThreeByTwoMeshes) {
  for (const std::vector<int64_t> &sizes : {std::vector<int64_t>{2, 3}, {3, 2}}) {
    for (const std::vector<int> &axes : {std::vector<int>{0}, {1}, {0, 1}}) {
      SCOPED_TRACE("mesh " + ::testing::PrintToString(sizes) + ", axes " +
                   ::testing::PrintToString(axes));
      auto world = makeLocalWorld(6);
      auto groups = meshGroups(world, sizes, axes);
      for (int r = 0; r < 6; ++r) {
        const MeshSlice slice = meshSlice(sizes, meshCoordinate(sizes, r), axes);
        EXPECT_EQ(membersOf(*groups[static_cast<size_t>(r)]), slice.ranks) << r;
        EXPECT_EQ(groups[static_cast<size_t>(r)]->rank(), slice.key) << r;
      }
      checkGroupCollectives(world, groups);
    }
  }
}

// Colors < 0 join nothing; keys order the group (here backwards), ties by rank.
TEST(GroupComm, SplitFollowsColorsAndKeys) {
  auto world = makeLocalWorld(5);
  auto groups = splitAll(world, {0, Communicator::kNoGroup, 0, 0, 7}, {3, 0, 3, 1, 0});
  EXPECT_EQ(groups[1], nullptr);
  ASSERT_NE(groups[0], nullptr);
  EXPECT_EQ(membersOf(*groups[0]), (std::vector<int>{3, 0, 2}));
  EXPECT_EQ(groups[3]->rank(), 0);
  EXPECT_EQ(groups[0]->rank(), 1);
  EXPECT_EQ(groups[2]->rank(), 2);
  EXPECT_EQ(groups[4]->size(), 1);
  EXPECT_EQ(groups[4]->worldRankOf(0), 4);
  // The world goes on working after its split, and a group splits again: world ranks carry
  // through.
  std::vector<std::unique_ptr<Communicator>> members;
  for (int r : {0, 2, 3})
    members.push_back(std::move(groups[static_cast<size_t>(r)]));
  // members (world ranks 0, 2, 3) are ranks 1, 2, 0 of the group; the pair {2, 3} splits off.
  std::vector<std::unique_ptr<Communicator>> pair(3);
  for (const Status &s : runRanks(members, [&](int i, Communicator &group) {
         return group.split(i == 0 ? Communicator::kNoGroup : 1, 0, &pair[static_cast<size_t>(i)]);
       }))
    ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(pair[0], nullptr);
  EXPECT_EQ(membersOf(*pair[1]), (std::vector<int>{3, 2}));
  EXPECT_EQ(pair[2]->worldRank(), 3);
  for (const Status &s : runRanks(world, [&](int r, Communicator &comm) {
         const float mine = static_cast<float>(r);
         std::vector<float> all(5);
         return comm.allGather(&mine, all.data(), 1);
       }))
    EXPECT_TRUE(s.isOk()) << s.message();
}

// A group member that never calls: its peer times out naming it by its world rank, and the
// group (as a group, by its name and members).
TEST(GroupComm, TimeoutsNameWorldRanksAndTheGroup) {
  const double timeout = 0.3;
  auto world = makeLocalWorld(4, timeout);
  auto tp = meshGroups(world, {2, 2}, {1});
  for (auto &group : tp)
    group->setGroupName("tp");
  EXPECT_EQ(tp[2]->timeoutSeconds(), timeout) << "a group keeps its parent's timeout";
  auto results = runRanks(world, [&](int r, Communicator &) {
    if (r == 3)
      return Status::ok();
    std::vector<float> data(40, 1.0f);
    return tp[static_cast<size_t>(r)]->allReduceSum(data.data(), data.size());
  });
  EXPECT_TRUE(results[0].isOk()) << results[0].message();
  EXPECT_TRUE(results[1].isOk()) << results[1].message();
  EXPECT_EQ(results[2].message(), "rank 2: all_reduce #1 in group 'tp' (ranks 2, 3): timed out "
                                  "after 0.3 s waiting for rank 3");
  // The world's own numbering is not the group's.
  std::vector<float> in(8, 1.0f), out(4);
  Status s = world[0]->reduceScatterSum(in.data(), out.data(), 2);
  EXPECT_EQ(s.message(), "rank 0: reduce_scatter #2: timed out after 0.3 s waiting for rank 3");
}

// A rank that never reaches the split: the others time out naming it.
TEST(GroupComm, ASplitWaitsAtMostTheTimeout) {
  auto world = makeLocalWorld(3, 0.3);
  std::vector<std::unique_ptr<Communicator>> groups(3);
  const auto start = Clock::now();
  auto results = runRanks(world, [&](int r, Communicator &comm) {
    if (r == 2)
      return Status::ok();
    return comm.split(0, r, &groups[static_cast<size_t>(r)]);
  });
  EXPECT_EQ(results[0].message(), "rank 0: split #1: timed out after 0.3 s waiting for rank 2");
  EXPECT_FALSE(results[1].isOk());
  EXPECT_EQ(groups[0], nullptr);
  EXPECT_LT(secondsSince(start), 5.0);
}

// An abort reaches every communicator of the family, whichever one it came through: a rank
// waiting in a group collective fails at once with the cause, naming the world rank that failed.
TEST(GroupComm, AbortReachesTheWorldAndEveryGroup) {
  for (bool throughGroup : {false, true}) {
    SCOPED_TRACE(throughGroup ? "abort through a group" : "abort through the world");
    auto world = makeLocalWorld(4, 60.0);
    auto dp = meshGroups(world, {2, 2}, {0}); // {0, 2}, {1, 3}
    auto tp = meshGroups(world, {2, 2}, {1}); // {0, 1}, {2, 3}
    const auto start = Clock::now();
    auto results = runRanks(world, [&](int r, Communicator &comm) {
      if (r == 3) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        (throughGroup ? *tp[3] : comm).abort("out of memory in matmul");
        return Status::ok();
      }
      // Rank 1 waits for rank 3 in their dp group; ranks 0 and 2 in theirs, then in tp.
      std::vector<float> data(4000, 1.0f);
      SHARDC_RETURN_IF_ERROR(dp[static_cast<size_t>(r)]->allReduceSum(data.data(), data.size()));
      return tp[static_cast<size_t>(r)]->allReduceSum(data.data(), data.size());
    });
    EXPECT_LT(secondsSince(start), 5.0);
    EXPECT_EQ(results[1].message(), "rank 1: all_reduce #1 in group (ranks 1, 3): rank 3 failed: "
                                    "out of memory in matmul");
    // Ranks 0 and 2 finish their dp all-reduce, unless the abort came first; either way they
    // fail with the cause.
    for (int r : {0, 2})
      EXPECT_TRUE(contains(results[static_cast<size_t>(r)].message(),
                           "rank 3 failed: out of memory in matmul"))
          << results[static_cast<size_t>(r)].message();
    std::vector<float> later(8, 1.0f);
    Status s = world[0]->allReduceSum(later.data(), later.size());
    EXPECT_EQ(s.message(), "rank 0: all_reduce #3: rank 3 failed: out of memory in matmul");
    std::unique_ptr<Communicator> none;
    s = world[0]->split(0, 0, &none);
    EXPECT_EQ(s.message(), "rank 0: split #4: rank 3 failed: out of memory in matmul");
  }
}

// Ranks that split while others run a collective fail rather than mix the two.
TEST(GroupComm, ASplitDoesNotMatchAnotherCollective) {
  auto world = makeLocalWorld(2, 5.0);
  auto results = runRanks(world, [&](int r, Communicator &comm) {
    if (r == 0) {
      std::unique_ptr<Communicator> group;
      return comm.split(0, 0, &group);
    }
    std::vector<float> data(6, 1.0f);
    return comm.allReduceSum(data.data(), data.size());
  });
  for (const Status &s : results) {
    EXPECT_FALSE(s.isOk());
    EXPECT_TRUE(contains(s.message(), "the ranks disagree on the collectives")) << s.message();
  }
}

// Groups may outlive their world's communicators and each other, in any order.
TEST(GroupComm, CommunicatorsCanBeDestroyedInAnyOrder) {
  auto world = makeLocalWorld(4);
  auto tp = meshGroups(world, {2, 2}, {1});
  world[0].reset();
  world[1].reset();
  std::vector<float> x = {1}, y = {2};
  std::thread other([&] { EXPECT_TRUE(tp[1]->allReduceSum(y.data(), 1).isOk()); });
  EXPECT_TRUE(tp[0]->allReduceSum(x.data(), 1).isOk());
  other.join();
  EXPECT_EQ(x[0], 3.0f);
  tp.clear();
  world.clear();
}

} // namespace
} // namespace shardc::runtime::testing
