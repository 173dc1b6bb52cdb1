// The ring collectives (runtime/comm/ring.h) on the local backend: sums against a double
// reference and against the documented summation order bit for bit, for 1 to 8 ranks and
// sizes that do and do not divide evenly; bit-identical repeats; bytes counted equal to
// comm_cost.h's prediction.
#include "runtime/comm/ring.h"
#include "runtime/common/comm_cost.h"
#include "tests/unit/comm/comm_test_util.h"

#include <cmath>
#include <string>

namespace shardc::runtime::testing {
namespace {

// The element counts tried for every world size: multiples of N with odd chunks.
std::vector<size_t> evenCounts(int ranks) {
  std::vector<size_t> counts;
  for (size_t chunk : {1u, 3u, 7u, 33u, 1001u})
    counts.push_back(chunk * static_cast<size_t>(ranks));
  return counts;
}

// Element i of the all-reduce as the ring sums it: chunk c (of `count` split over `ranks`)
// starts with rank c+1 and adds ranks c+2, ..., c left to right.
float ringOrderSum(const std::vector<std::vector<float>> &data, size_t i, size_t count) {
  const int ranks = static_cast<int>(data.size());
  int chunk = 0;
  while (ringChunkBegin(count, ranks, chunk + 1) <= i)
    ++chunk;
  float sum = data[static_cast<size_t>((chunk + 1) % ranks)][i];
  for (int k = 2; k <= ranks; ++k)
    sum = sum + data[static_cast<size_t>((chunk + k) % ranks)][i];
  return sum;
}

// |float sum - exact sum| <= (N-1) eps sum|x| for any summation order.
void expectNearExact(const std::vector<std::vector<float>> &data, size_t i, float actual) {
  double exact = 0, magnitude = 0;
  for (const auto &rank : data) {
    exact += rank[i];
    magnitude += std::fabs(rank[i]);
  }
  const double bound = static_cast<double>(data.size()) * 0x1p-23 * magnitude + 1e-30;
  EXPECT_NEAR(actual, exact, bound) << "element " << i;
}

std::vector<std::vector<float>> worldData(int ranks, size_t count, unsigned salt) {
  std::vector<std::vector<float>> data;
  for (int r = 0; r < ranks; ++r)
    data.push_back(rankData(r, count, salt));
  return data;
}

void checkAllReduce(int ranks, size_t count) {
  SCOPED_TRACE("ranks " + std::to_string(ranks) + ", count " + std::to_string(count));
  const auto data = worldData(ranks, count, 1);
  auto results = data;
  auto comms = makeLocalWorld(ranks);
  for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
         return comm.allReduceSum(results[static_cast<size_t>(r)].data(), count);
       }))
    ASSERT_TRUE(s.isOk()) << s.message();
  for (size_t i = 0; i < count; ++i) {
    const float expected = ringOrderSum(data, i, count);
    EXPECT_EQ(results[0][i], expected) << "element " << i << " is not summed in ring order";
    expectNearExact(data, i, results[0][i]);
  }
  for (int r = 1; r < ranks; ++r)
    EXPECT_TRUE(sameBits(results[static_cast<size_t>(r)], results[0]))
        << "rank " << r << " got other bits than rank 0";
  for (int r = 0; r < ranks; ++r) {
    const CommCounters &c = comms[static_cast<size_t>(r)]->counters();
    EXPECT_EQ(c.calls[0], 1u);
    if (count % static_cast<size_t>(ranks) == 0)
      EXPECT_EQ(c.bytesSent[0], collectiveBytesSent(CollectiveKind::AllReduce, count, ranks, 4));
    EXPECT_EQ(c.totalBytesSent(), c.bytesSent[0]);
  }
}

TEST(Ring, AllReduceSumsInRingOrderForOneToEightRanks) {
  for (int ranks = 1; ranks <= 8; ++ranks)
    for (size_t count : evenCounts(ranks))
      checkAllReduce(ranks, count);
}

// Counts the kernels never pass (they pad) still work, with uneven and even empty chunks.
TEST(Ring, AllReduceAcceptsCountsThatDoNotDivideEvenly) {
  for (int ranks : {2, 3, 5, 8})
    for (size_t count : {1u, 2u, 7u, 13u, 1000u})
      checkAllReduce(ranks, count);
}

TEST(Ring, ReduceScatterGivesEachRankItsChunkOfTheAllReduce) {
  for (int ranks = 1; ranks <= 8; ++ranks) {
    for (size_t chunk : {1u, 5u, 257u}) {
      SCOPED_TRACE("ranks " + std::to_string(ranks) + ", chunk " + std::to_string(chunk));
      const size_t total = chunk * static_cast<size_t>(ranks);
      const auto data = worldData(ranks, total, 2);
      std::vector<std::vector<float>> outs(static_cast<size_t>(ranks),
                                           std::vector<float>(chunk, -7.0f));
      auto comms = makeLocalWorld(ranks);
      for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
             return comm.reduceScatterSum(data[static_cast<size_t>(r)].data(),
                                          outs[static_cast<size_t>(r)].data(), chunk);
           }))
        ASSERT_TRUE(s.isOk()) << s.message();
      // The same bits as the all-reduce of the same data: ZeRO and plain data parallelism
      // round alike.
      auto reduced = data;
      auto again = makeLocalWorld(ranks);
      for (const Status &s : runRanks(again, [&](int r, Communicator &comm) {
             return comm.allReduceSum(reduced[static_cast<size_t>(r)].data(), total);
           }))
        ASSERT_TRUE(s.isOk()) << s.message();
      for (int r = 0; r < ranks; ++r) {
        const std::vector<float> expected(reduced[0].begin() + static_cast<long>(r * chunk),
                                          reduced[0].begin() + static_cast<long>((r + 1) * chunk));
        EXPECT_TRUE(sameBits(outs[static_cast<size_t>(r)], expected)) << "rank " << r;
        for (size_t j = 0; j < chunk; ++j)
          expectNearExact(data, static_cast<size_t>(r) * chunk + j,
                          outs[static_cast<size_t>(r)][j]);
        const CommCounters &c = comms[static_cast<size_t>(r)]->counters();
        EXPECT_EQ(c.calls[1], 1u);
        EXPECT_EQ(c.bytesSent[1],
                  collectiveBytesSent(CollectiveKind::ReduceScatter, total, ranks, 4));
        EXPECT_EQ(c.totalBytesSent(), c.bytesSent[1]);
      }
    }
  }
}

TEST(Ring, AllGatherConcatenatesTheShardsInRankOrder) {
  for (int ranks = 1; ranks <= 8; ++ranks) {
    for (size_t chunk : {1u, 6u, 129u}) {
      SCOPED_TRACE("ranks " + std::to_string(ranks) + ", chunk " + std::to_string(chunk));
      const auto shards = worldData(ranks, chunk, 3);
      const size_t total = chunk * static_cast<size_t>(ranks);
      std::vector<std::vector<float>> outs(static_cast<size_t>(ranks),
                                           std::vector<float>(total, -7.0f));
      auto comms = makeLocalWorld(ranks);
      for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
             return comm.allGather(shards[static_cast<size_t>(r)].data(),
                                   outs[static_cast<size_t>(r)].data(), chunk);
           }))
        ASSERT_TRUE(s.isOk()) << s.message();
      std::vector<float> expected;
      for (const auto &shard : shards)
        expected.insert(expected.end(), shard.begin(), shard.end());
      for (int r = 0; r < ranks; ++r) {
        EXPECT_TRUE(sameBits(outs[static_cast<size_t>(r)], expected)) << "rank " << r;
        const CommCounters &c = comms[static_cast<size_t>(r)]->counters();
        EXPECT_EQ(c.calls[2], 1u);
        EXPECT_EQ(c.bytesSent[2], collectiveBytesSent(CollectiveKind::AllGather, total, ranks, 4));
      }
    }
  }
}

// Thread timing changes from run to run; the bits must not.
TEST(Ring, RepeatedRunsAreBitIdentical) {
  const int ranks = 7;
  const size_t count = 7 * 4099;
  const auto data = worldData(ranks, count, 4);
  std::vector<float> first;
  for (int run = 0; run < 5; ++run) {
    auto results = data;
    auto comms = makeLocalWorld(ranks);
    for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
           return comm.allReduceSum(results[static_cast<size_t>(r)].data(), count);
         }))
      ASSERT_TRUE(s.isOk()) << s.message();
    if (run == 0)
      first = results[0];
    else
      EXPECT_TRUE(sameBits(results[0], first)) << "run " << run;
  }
}

// Many collectives of every kind back to back through one world: sequence numbers, mailboxes
// and counters stay in step.
TEST(Ring, ManyCollectivesInARowAccumulateTheCounters) {
  const int ranks = 5;
  auto comms = makeLocalWorld(ranks);
  const int rounds = 60;
  for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
         std::vector<float> buffer = rankData(r, 5 * 11, 5), out(5 * 11), shard(11);
         for (int i = 0; i < rounds; ++i) {
           SHARDC_RETURN_IF_ERROR(comm.allReduceSum(buffer.data(), buffer.size()));
           SHARDC_RETURN_IF_ERROR(comm.reduceScatterSum(buffer.data(), shard.data(), 11));
           SHARDC_RETURN_IF_ERROR(comm.allGather(shard.data(), out.data(), 11));
           // Keep the values bounded.
           for (float &x : buffer)
             x = x / ranks;
         }
         return Status::ok();
       }))
    ASSERT_TRUE(s.isOk()) << s.message();
  const uint64_t perCall = collectiveBytesSent(CollectiveKind::ReduceScatter, 55, ranks, 4);
  for (const auto &comm : comms) {
    const CommCounters &c = comm->counters();
    EXPECT_EQ(c.calls[0], static_cast<uint64_t>(rounds));
    EXPECT_EQ(c.calls[1], static_cast<uint64_t>(rounds));
    EXPECT_EQ(c.calls[2], static_cast<uint64_t>(rounds));
    EXPECT_EQ(c.totalBytesSent(), static_cast<uint64_t>(rounds) * 4 * perCall);
  }
}

TEST(Ring, EmptyCollectivesSendNothing) {
  auto comms = makeLocalWorld(3);
  for (const Status &s : runRanks(comms, [&](int, Communicator &comm) {
         float x = 1, y = 2;
         SHARDC_RETURN_IF_ERROR(comm.allReduceSum(nullptr, 0));
         SHARDC_RETURN_IF_ERROR(comm.reduceScatterSum(&x, &y, 0));
         return comm.allGather(&x, &y, 0);
       }))
    ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(comms[0]->counters().totalBytesSent(), 0u);
  EXPECT_EQ(comms[0]->counters().calls[2], 1u);
}

TEST(Ring, OverlappingOrNullBuffersAreErrorsBeforeAnythingIsSent) {
  auto comms = makeLocalWorld(2);
  std::vector<float> buffer(8);
  Status s = comms[0]->reduceScatterSum(buffer.data(), buffer.data() + 3, 2);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "rank 0: reduce_scatter #1: the input and output buffers overlap");
  s = comms[0]->allGather(buffer.data() + 2, buffer.data(), 2);
  EXPECT_EQ(s.message(), "rank 0: all_gather #2: the input and output buffers overlap");
  s = comms[0]->allReduceSum(nullptr, 4);
  EXPECT_EQ(s.message(), "rank 0: all_reduce #3: null buffer");
  EXPECT_EQ(comms[0]->counters().totalBytesSent(), 0u);
}

TEST(CommCounters, TotalAndCollectiveNames) {
  CommCounters c;
  c.bytesSent[0] = 10;
  c.bytesSent[1] = 20;
  c.bytesSent[2] = 12;
  EXPECT_EQ(c.totalBytesSent(), 42u);
  EXPECT_STREQ(collectiveName(CollectiveKind::AllReduce), "all_reduce");
  EXPECT_STREQ(collectiveName(CollectiveKind::ReduceScatter), "reduce_scatter");
  EXPECT_STREQ(collectiveName(CollectiveKind::AllGather), "all_gather");
  EXPECT_STREQ(collectiveName(CollectiveKind::AllToAll), "all_to_all");
  EXPECT_STREQ(collectiveName(CollectiveKind::SendRecv), "send_recv");
  // The kernel of each kind names it back; other kernels name no collective.
  for (int k = 0; k < kCollectiveKinds; ++k) {
    CollectiveKind kind = CollectiveKind::AllReduce;
    EXPECT_TRUE(collectiveOfKernel(collectiveName(static_cast<CollectiveKind>(k)), &kind));
    EXPECT_EQ(static_cast<int>(kind), k);
  }
  CollectiveKind untouched = CollectiveKind::AllGather;
  EXPECT_FALSE(collectiveOfKernel("shard_slice", &untouched));
  EXPECT_FALSE(collectiveOfKernel("matmul", &untouched));
  EXPECT_EQ(untouched, CollectiveKind::AllGather);
}

TEST(CommCost, PaddingAndBytes) {
  EXPECT_EQ(paddedToRanks(10, 4), 12u);
  EXPECT_EQ(paddedToRanks(12, 4), 12u);
  EXPECT_EQ(paddedToRanks(0, 3), 0u);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllReduce, 12, 4, 4), 2u * 3 * 3 * 4);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::ReduceScatter, 12, 4, 4), 3u * 3 * 4);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllGather, 12, 1, 4), 0u);
  // The element's size scales every chunk: bf16 and f16 send half of f32, raw bytes a quarter.
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllReduce, 12, 4, 2), 2u * 3 * 3 * 2);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllGather, 12, 4, 1), 3u * 3);
  // A transfer sends its message whole, whatever the communicator's size.
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::SendRecv, 13, 2, 4), 13u * 4);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::SendRecv, 13, 8, 2), 13u * 2);
}

// A transport that records what the ring hands it, to pin the schedule of one rank.
class RecordingTransport : public Transport {
public:
  struct Step {
    size_t sendBytes;
    int to;
    size_t recvBytes;
    int from;
  };
  Status peerSendRecv(const void *, size_t sendBytes, int to, uint64_t, void *recv,
                      size_t recvBytes, int from, uint64_t) override {
    steps.push_back({sendBytes, to, recvBytes, from});
    std::memset(recv, 0, recvBytes);
    return Status::ok();
  }
  // The ring never posts.
  Status postSend(const void *, size_t, int, uint64_t) override {
    return Status::error("the ring posted a send");
  }
  Status finishPostedSends() override { return Status::ok(); }
  std::vector<Step> steps;
};

TEST(Ring, EachStepSendsOneChunkToTheNextRank) {
  RecordingTransport transport;
  const int ranks = 4, rank = 2;
  std::vector<float> data(40), scratch(10);
  uint64_t bytes = 0;
  ASSERT_TRUE(ringAllReduceSum(transport, rank, ranks, data.data(), 40, CommDType::F32,
                               scratch.data(), 1, &bytes)
                  .isOk());
  ASSERT_EQ(transport.steps.size(), 6u);
  for (const auto &step : transport.steps) {
    EXPECT_EQ(step.to, 3);
    EXPECT_EQ(step.from, 1);
    EXPECT_EQ(step.sendBytes, 40u);
    EXPECT_EQ(step.recvBytes, 40u);
  }
  EXPECT_EQ(bytes, collectiveBytesSent(CollectiveKind::AllReduce, 40, ranks, 4));

  // The same schedule on bf16 moves chunks of half the bytes.
  RecordingTransport halfTransport;
  std::vector<uint16_t> halves(40), halfScratch(10);
  bytes = 0;
  ASSERT_TRUE(ringAllReduceSum(halfTransport, rank, ranks, halves.data(), 40, CommDType::BF16,
                               halfScratch.data(), 1, &bytes)
                  .isOk());
  ASSERT_EQ(halfTransport.steps.size(), 6u);
  for (const auto &step : halfTransport.steps) {
    EXPECT_EQ(step.sendBytes, 20u);
    EXPECT_EQ(step.recvBytes, 20u);
  }
  EXPECT_EQ(bytes, collectiveBytesSent(CollectiveKind::AllReduce, 40, ranks, 2));
}

} // namespace
} // namespace shardc::runtime::testing
